import Foundation
import HTTP2
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime

/// A standalone connection over real TLS on loopback, against Debian's nghttpd: what only a real
/// transport shows (a round trip through TLS, back-pressure on the socket buffer). The protocol
/// behaviour is tested in memory (`InMemoryStreamTests`, `InMemoryLifecycleTests`).
@Suite("Client connection round trips", .serialized, .timeLimit(.minutes(10)), .heavy)
struct ClientConnectionTests {
    // The time limit only catches a hang: it also counts the wait for a heavy-test slot, which a
    // full parallel run can make minutes long (the 100,000-token cluster test holds three).

    @Test func getAndPostRoundTripWithStatusHeadersAndBody() async throws {
        let server = try ServerProcess.nghttpd()
        let client = try TestClient(port: server.port)
        defer { client.close() }
        let get = HTTP2Request(template: TestRequests.getTemplate(port: server.port), path: "/hello.txt")
        let missing = HTTP2Request(template: TestRequests.getTemplate(port: server.port), path: "/missing.txt")
        let post = TestRequests.posts(1, port: server.port)[0]

        let outcome = try await sendAll([get, missing, post], via: client.connection, on: client.loop)

        let responses = try outcome.results.map { try $0.get() }
        #expect(responses[0].status == 200)
        #expect(String(decoding: responses[0].body, as: UTF8.self) == TestPKI.helloBody)
        #expect(responses[0].header("content-length") == "\(TestPKI.helloBody.utf8.count)")
        #expect(responses[1].status == 404)
        #expect(responses[2].status == 200)
        #expect(responses[2].body == post.body)
        #expect(outcome.offLoopCompletions == 0)
    }

    @Test func outputBufferStaysBoundedByTheHighWaterMark() async throws {
        // Large windows on the server so that only our back-pressure limits the output.
        let server = try ServerProcess.nghttpd(extraArguments: ["-w", "24", "-W", "30"])
        let highWater = 64 * 1024
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: server.port)
        configuration.writeHighWaterMark = highWater
        let client = try TestClient(configuration: configuration)
        defer { client.close() }
        let requests = TestRequests.posts(60, port: server.port, bodySize: 256 * 1024)

        let outcome = try await sendAll(requests, via: client.connection, on: client.loop, timeout: .seconds(60))

        for (index, result) in outcome.results.enumerated() {
            #expect(try result.get().body == requests[index].body)
        }
        let peak = try client.stats().peakBufferedOutput
        #expect(peak >= highWater, "the test did not push enough data to reach the mark")
        #expect(peak <= highWater + 16_384 + 64, "output buffer grew past the high-water mark plus one frame")
    }
}

/// A standalone connection over TLS on its own loop, for tests.
final class TestClient: @unchecked Sendable {
    let loop: EventLoop
    let connection: HTTP2ClientConnection

    convenience init(port: Int, host: String = "127.0.0.1") throws {
        try self.init(configuration: HTTP2ConnectionConfiguration(host: host, port: port))
    }

    init(configuration: HTTP2ConnectionConfiguration, context: TLSContext? = nil) throws {
        let context = try context ?? TestPKI.shared.clientContext()
        loop = EventLoop.start(name: "test-client")
        let loop = loop
        connection = try loop.sync { HTTP2ClientConnection(loop: loop, context: context, configuration: configuration) }
    }

    func stats() throws -> HTTP2ClientConnection.Stats {
        try loop.sync { [connection] in connection.stats }
    }

    func close() {
        try? loop.sync { [connection] in connection.close() }
        loop.stopAndWait()
    }
}
