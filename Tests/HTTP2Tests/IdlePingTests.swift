import Foundation
import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

@Suite("Idle PING", .serialized, .timeLimit(.minutes(1)))
struct IdlePingTests {
    private func configuration(port: Int) -> HTTP2ConnectionConfiguration {
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: port)
        configuration.idlePingInterval = .milliseconds(100)
        configuration.pingTimeout = .milliseconds(300)
        return configuration
    }

    @Test func idleConnectionIsPingedAndStaysOpenWhenAnswered() async throws {
        let server = try TestHTTP2Server()
        defer { server.stop() }
        let client = try TestClient(configuration: configuration(port: server.port))
        defer { client.close() }
        try await client.waitUntilReady()

        try await waitUntil(on: client.loop, "two PINGs") { server.stats().pingsReceived >= 2 }

        #expect(try client.stats().state == .ready)
        let outcome = try await sendAll(TestRequests.posts(1, port: server.port), via: client.connection, on: client.loop)
        #expect(outcome.successes.count == 1)
    }

    @Test func unansweredPingClosesTheConnection() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.answerPings = false
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let client = try TestClient(configuration: configuration(port: server.port))
        defer { client.close() }
        try await client.waitUntilReady()

        try await waitUntil(on: client.loop, "connection closed") { [connection = client.connection] in connection.state == .closed }

        let error = try client.loop.sync { [connection = client.connection] in connection.closeError }
        guard case .timeout(let what) = error else {
            Issue.record("expected a PING timeout, got \(String(describing: error))")
            return
        }
        #expect(what.contains("PING"))
        #expect(server.stats().pingsReceived >= 1)
    }

    @Test func busyConnectionIsNotPinged() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.answerPings = false
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        var configuration = configuration(port: server.port)
        // Long enough that a loaded machine cannot open a quiet gap of a whole interval between
        // two requests 20 ms apart (the idle check looks once per interval).
        configuration.idlePingInterval = .seconds(1)
        let client = try TestClient(configuration: configuration)
        defer { client.close() }
        try await client.waitUntilReady()

        // Traffic every 20 ms for well over two idle intervals: no PING may go out, so the connection survives.
        for _ in 0..<110 {
            let outcome = try await sendAll(TestRequests.posts(1, port: server.port), via: client.connection, on: client.loop)
            #expect(outcome.successes.count == 1)
            try await Task.sleep(for: .milliseconds(20))
        }

        #expect(server.stats().pingsReceived == 0)
        #expect(try client.stats().state == .ready)
    }
}
