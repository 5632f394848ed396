import Foundation
import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

/// A standalone connection over real TLS on loopback, against Debian's nghttpd and the in-test server.
@Suite("Client connection round trips", .serialized, .timeLimit(.minutes(3)))
struct ClientConnectionTests {
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

    /// With a limit of 100 the client queues 900 requests; with 1,000 all are on the wire at once.
    @Test(arguments: [100, 1_000])
    func thousandConcurrentRequestsOnOneConnectionCompleteExactlyOnce(serverStreamLimit: Int) async throws {
        let server = try ServerProcess.nghttpd(maxConcurrentStreams: serverStreamLimit)
        let client = try TestClient(port: server.port)
        defer { client.close() }
        let requests = TestRequests.posts(1000, port: server.port)

        let outcome = try await sendAll(requests, via: client.connection, on: client.loop, timeout: .seconds(60))

        #expect(outcome.duplicateCompletions == 0)
        #expect(outcome.offLoopCompletions == 0)
        for (index, result) in outcome.results.enumerated() {
            let response = try result.get()
            #expect(response.status == 200)
            #expect(response.body == requests[index].body, "response \(index) carries another request's body")
        }
        let stats = try client.stats()
        #expect(stats.state == .ready)
        #expect(stats.inFlight == 0 && stats.queued == 0)
        #expect(stats.completed == 1000)
        #expect(stats.remoteMaxConcurrentStreams == UInt32(serverStreamLimit))
        #expect(stats.peakInFlight == serverStreamLimit)
    }

    @Test func headerListCarriesPseudoTemplateAndDynamicHeaders() async throws {
        let server = try TestHTTP2Server()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }
        // More templates than the connection caches, up to 41 fixed headers, GET and POST, 0 to 6
        // dynamic headers, paths up to 5 KB: the scratch list and arena must grow.
        let templates = (0..<80).map { index in
            HeaderTemplate(method: index % 3 == 0 ? .get : .post, authority: "127.0.0.1:\(server.port)",
                           headers: [HTTP2Header("apns-topic", "com.example.app\(index)"), HTTP2Header("apns-push-type", "liveactivity")]
                               + (0..<(index % 40)).map { HTTP2Header("x-fixed-\($0)", "value \($0)") })
        }
        let requests = (0..<200).map { index -> HTTP2Request in
            var headers = DynamicHeaders()
            for field in 0..<(index % (DynamicHeaders.capacity + 1)) {
                if field % 2 == 0 {
                    headers.add("apns-expiration", String(repeating: "\(field)", count: index % 40 + 1), indexed: true)
                } else {
                    headers.add("apns-request-id", "request-\(index)-\(field)")
                }
            }
            let template = templates[index % templates.count]
            return HTTP2Request(template: template, path: "/3/device/\(String(repeating: "ab", count: index * 13))", headers: headers,
                                body: template.method == .post ? TestRequests.body(index) : [])
        }

        let outcome = try await sendAll(requests, via: client.connection, on: client.loop)

        for (index, result) in outcome.results.enumerated() {
            let response = try result.get()
            let request = requests[index]
            #expect(response.header("x-request-path") == request.path)
            #expect(response.header("x-request-method") == request.template.method.rawValue)
            #expect(response.header("x-echo-apns-topic") == request.template.headers[0].value)
            #expect(response.header("x-echo-apns-push-type") == "liveactivity")
            #expect(response.headers.filter { $0.name.hasPrefix("x-echo-x-fixed-") }.count == request.template.headers.count - 2)
            let dynamic = (0..<request.headers.count).map { request.headers[$0] }
            for name in ["apns-expiration", "apns-request-id"] {
                let echoed = response.headers.filter { $0.name == "x-echo-\(name)" }.map(\.value)
                #expect(echoed == dynamic.filter { $0.name.description == name }.map(\.value))
            }
            // HPACK: per-request values go out as never-indexed literals, everything else may be indexed.
            let neverIndexed = response.header("x-never-indexed")?.split(separator: ",").map(String.init) ?? []
            #expect(neverIndexed == dynamic.filter { !$0.indexed }.map(\.name.description))
            #expect(response.body == (request.body.isEmpty ? Array(TestPKI.helloBody.utf8) : request.body))
        }
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

/// A standalone connection on its own loop, for tests.
final class TestClient: @unchecked Sendable {
    let loop: EventLoop
    let connection: HTTP2ClientConnection

    convenience init(port: Int, host: String = "127.0.0.1") throws {
        try self.init(configuration: HTTP2ConnectionConfiguration(host: host, port: port))
    }

    init(configuration: HTTP2ConnectionConfiguration, context: TLSContext? = nil, delegate: HTTP2ClientConnectionDelegate? = nil) throws {
        let context = try context ?? TestPKI.shared.clientContext()
        loop = EventLoop.start(name: "test-client")
        let loop = loop
        let box = DelegateBox(delegate)
        connection = try loop.sync { HTTP2ClientConnection(loop: loop, context: context, configuration: configuration, delegate: box.delegate) }
    }

    func stats() throws -> HTTP2ClientConnection.Stats {
        try loop.sync { [connection] in connection.stats }
    }

    func waitUntilReady() async throws {
        try await waitUntil(on: loop, "connection ready") { [connection] in connection.state == .ready }
    }

    func close() {
        try? loop.sync { [connection] in connection.close() }
        loop.stopAndWait()
    }
}

/// Carries a loop-confined delegate into the loop's closure.
private struct DelegateBox: @unchecked Sendable {
    weak var delegate: HTTP2ClientConnectionDelegate?
    init(_ delegate: HTTP2ClientConnectionDelegate?) { self.delegate = delegate }
}
