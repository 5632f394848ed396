import Foundation
import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

/// SETTINGS_MAX_CONCURRENT_STREAMS, including changes while requests flow. The client's own
/// accounting is checked through its peak in-flight count (nghttp2 would hold back excess
/// HEADERS by itself, hiding an overrun from the server); the in-test server checks the wire.
@Suite("Stream limits", .serialized, .timeLimit(.minutes(2)))
struct StreamLimitTests {
    private func run(_ behaviour: TestHTTP2Server.Behaviour, requests count: Int) async throws
        -> (Outcome, TestHTTP2Server.Stats, HTTP2ClientConnection.Stats) {
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }
        let outcome = try await sendAll(TestRequests.posts(count, port: server.port), via: client.connection, on: client.loop)
        return (outcome, server.stats(), try client.stats())
    }

    @Test func smallLimitIsNeverExceeded() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.maxConcurrentStreams = 5
        behaviour.responseDelay = .milliseconds(5)

        let (outcome, server, client) = try await run(behaviour, requests: 200)

        #expect(outcome.successes.count == 200)
        #expect(server.peakOpen == 5, "the client should fill but never exceed the limit")
        #expect(server.limitViolations == 0)
        #expect(server.resetsByLibrary == 0 && server.protocolErrors == 0)
        #expect(client.remoteMaxConcurrentStreams == 5)
        #expect(client.peakInFlight == 5)
    }

    @Test func apnsStyleRampFromOneStreamToMany() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.maxConcurrentStreams = 1
        behaviour.limitChanges = [.init(afterResponses: 1, limit: 50)]
        behaviour.responseDelay = .milliseconds(5)

        let (outcome, server, client) = try await run(behaviour, requests: 300)

        #expect(outcome.successes.count == 300)
        #expect(server.peakOpenByLimit[1] == 1, "only one stream may be open before the first response")
        #expect(server.peakOpenByLimit[50] == 50)
        #expect(server.limitViolations == 0)
        #expect(server.resetsByLibrary == 0 && server.protocolErrors == 0)
        #expect(client.remoteMaxConcurrentStreams == 50)
        #expect(client.peakInFlight == 50)
    }

    @Test func loweredLimitIsHonoured() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.maxConcurrentStreams = 20
        behaviour.limitChanges = [.init(afterResponses: 40, limit: 3), .init(afterResponses: 150, limit: 10)]
        behaviour.responseDelay = .milliseconds(5)

        let (outcome, server, client) = try await run(behaviour, requests: 300)

        #expect(outcome.successes.count == 300)
        #expect(server.peakOpenByLimit[20] == 20)
        #expect(server.peakOpenByLimit[3] == 3, "no stream may open while 3 or more are open")
        #expect(server.limitViolations == 0)
        #expect(server.resetsByLibrary == 0 && server.protocolErrors == 0)
        #expect(client.remoteMaxConcurrentStreams == 10)
        #expect(client.peakInFlight == 20)
    }

    @Test func queueBeyondItsBoundFailsWithQueueFull() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.maxConcurrentStreams = 2
        behaviour.responseDelay = .milliseconds(50)
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: server.port)
        configuration.maxQueuedRequests = 10
        let client = try TestClient(configuration: configuration)
        defer { client.close() }
        try await client.waitUntilReady()

        let outcome = try await sendAll(TestRequests.posts(50, port: server.port), via: client.connection, on: client.loop)

        #expect(outcome.successes.count == 12, "2 streams in flight plus 10 queued")
        #expect(outcome.failures.count == 38)
        #expect(outcome.failures.allSatisfy { if case .queueFull = $0 { true } else { false } })
        #expect(outcome.results.prefix(12).allSatisfy { (try? $0.get()) != nil }, "the first requests keep their places")
    }
}
