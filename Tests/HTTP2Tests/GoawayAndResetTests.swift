import CNGHTTP2
import Foundation
import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

/// An owner that records what a connection hands back (and fails those requests so the test can finish).
final class RecordingOwner: HTTP2ClientConnectionDelegate, @unchecked Sendable {
    private(set) var handedBack: [(path: String, reason: HTTP2RetryReason)] = []
    private(set) var drainingCount = 0
    private(set) var closes: [(error: TransportError?, wasReady: Bool)] = []

    func connectionDidBecomeReady(_ connection: HTTP2ClientConnection) {}

    func connectionDidStartDraining(_ connection: HTTP2ClientConnection) { drainingCount += 1 }

    func connection(_ connection: HTTP2ClientConnection, handsBack request: HTTP2PendingRequest, reason: HTTP2RetryReason) {
        handedBack.append((request.request.path, reason))
        request.complete(.failure(.retriesExhausted(last: "handed back: \(reason)")))
    }

    func connection(_ connection: HTTP2ClientConnection, didCloseWith error: TransportError?, wasReady: Bool) {
        closes.append((error, wasReady))
    }
}

@Suite("GOAWAY, RST_STREAM and shutdown", .serialized, .timeLimit(.minutes(2)))
struct GoawayAndResetTests {
    private func goawayBehaviour(answered: Bool, errorCode: UInt32 = 0, reason: String = "Shutdown") -> TestHTTP2Server.Behaviour {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.goawayAfter = 5
        behaviour.responseDelay = .milliseconds(30)
        behaviour.answerBeforeGoawayClose = answered
        behaviour.goawayErrorCode = errorCode
        behaviour.goawayDebugData = #"{"reason": "\#(reason)"}"#
        return behaviour
    }

    @Test func goawayHandsBackStreamsAboveLastStreamIDAndCompletesTheRest() async throws {
        let server = try TestHTTP2Server(goawayBehaviour(answered: true))
        defer { server.stop() }
        let owner = RecordingOwner()
        let client = try TestClient(configuration: .init(host: "127.0.0.1", port: server.port), delegate: owner)
        defer { client.close() }

        let outcome = try await sendAll(TestRequests.posts(20, port: server.port), via: client.connection, on: client.loop)

        #expect(outcome.successes.count == 5)
        #expect(outcome.results.prefix(5).allSatisfy { (try? $0.get())?.status == 200 })
        try await waitUntil(on: client.loop, "connection closed") { [connection = client.connection] in connection.state == .closed }
        let (handedBack, drainingCount, closes) = try client.loop.sync { (owner.handedBack, owner.drainingCount, owner.closes) }
        #expect(handedBack.count == 15)
        #expect(handedBack.allSatisfy { if case .goaway(0, "Shutdown") = $0.reason { true } else { false } })
        #expect(drainingCount == 1)
        #expect(closes.count == 1 && closes.first?.error == nil, "a drained connection closes cleanly: \(closes)")
    }

    @Test func standaloneConnectionFailsUnprocessedRequestsWithTheGoawayReason() async throws {
        let server = try TestHTTP2Server(goawayBehaviour(answered: true))
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }

        let outcome = try await sendAll(TestRequests.posts(20, port: server.port), via: client.connection, on: client.loop)

        #expect(outcome.successes.count == 5)
        #expect(outcome.failures.count == 15)
        #expect(outcome.failures.allSatisfy { if case .goaway(0, "Shutdown") = $0 { true } else { false } })
    }

    @Test func streamsAtOrBelowLastStreamIDLeftUnansweredFailWithGoaway() async throws {
        let server = try TestHTTP2Server(goawayBehaviour(answered: false, errorCode: NGHTTP2_INTERNAL_ERROR.rawValue,
                                                         reason: "InternalServerError"))
        defer { server.stop() }
        let owner = RecordingOwner()
        let client = try TestClient(configuration: .init(host: "127.0.0.1", port: server.port), delegate: owner)
        defer { client.close() }

        let outcome = try await sendAll(TestRequests.posts(20, port: server.port), via: client.connection, on: client.loop)

        let goawayFailures = outcome.results.prefix(5).compactMap { result -> (UInt32, String?)? in
            if case .failure(.goaway(let code, let reason)) = result { (code, reason) } else { nil }
        }
        #expect(goawayFailures.count == 5, "the processed-but-unanswered requests fail with the GOAWAY")
        #expect(goawayFailures.allSatisfy { $0.0 == NGHTTP2_INTERNAL_ERROR.rawValue && $0.1 == "InternalServerError" })
        let handedBack = try client.loop.sync { owner.handedBack }
        #expect(handedBack.count == 15, "unprocessed requests go back to the owner: \(handedBack.map(\.reason))")
    }

    @Test func refusedStreamsAreRetried() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.refuseFirst = 3
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }

        let requests = TestRequests.posts(10, port: server.port)
        let outcome = try await sendAll(requests, via: client.connection, on: client.loop)

        #expect(outcome.successes.count == 10)
        for (index, result) in outcome.results.enumerated() { #expect(try result.get().body == requests[index].body) }
        #expect(server.stats().requests == 13)
    }

    @Test func endlesslyRefusedStreamsExhaustTheirRetries() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.refuseFirst = 1_000
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: server.port)
        configuration.maxRefusedRetries = 2
        let client = try TestClient(configuration: configuration)
        defer { client.close() }

        let outcome = try await sendAll(TestRequests.posts(4, port: server.port), via: client.connection, on: client.loop)

        #expect(outcome.failures.count == 4)
        #expect(outcome.failures.allSatisfy { if case .retriesExhausted(let last) = $0 { last.contains("REFUSED_STREAM") } else { false } })
        #expect(server.stats().requests == 12, "one try and two retries each")
    }

    @Test func otherStreamResetsFailWithTheirCode() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.resetPath = "/echo/1"
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }

        let outcome = try await sendAll(TestRequests.posts(3, port: server.port), via: client.connection, on: client.loop)

        guard case .failure(.streamReset(let code)) = outcome.results[1] else {
            Issue.record("expected a stream reset, got \(outcome.results[1])")
            return
        }
        #expect(code == NGHTTP2_CANCEL.rawValue)
        #expect(outcome.successes.count == 2)
    }

    @Test func gracefulShutdownLetsInFlightStreamsFinish() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        // Long enough that a busy machine cannot finish the five streams before the test sees them in flight.
        behaviour.responseDelay = .seconds(1)
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let owner = RecordingOwner()
        let client = try TestClient(configuration: .init(host: "127.0.0.1", port: server.port), delegate: owner)
        defer { client.close() }
        try await client.waitUntilReady()
        let connection = client.connection

        async let inFlight = sendAll(TestRequests.posts(5, port: server.port), via: connection, on: client.loop)
        try await waitUntil(on: client.loop, "requests in flight") { connection.stats.inFlight == 5 }
        try client.loop.sync { connection.shutdown(gracePeriod: .seconds(5)) }
        let late = try await sendAll(TestRequests.posts(1, port: server.port), via: connection, on: client.loop)

        #expect(try await inFlight.successes.count == 5)
        #expect(late.failures.count == 1)
        if case .shutdown = late.failures.first {} else { Issue.record("expected .shutdown, got \(late.results)") }
        try await waitUntil(on: client.loop, "connection closed") { connection.state == .closed }
        #expect(server.stats().goawaysReceived == 1)
        let closes = try client.loop.sync { owner.closes }
        #expect(closes.count == 1 && closes.first?.error == nil)
    }

    @Test func shutdownFailsStreamsStillOpenAfterTheGracePeriod() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.responseDelay = .seconds(30)
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }
        try await client.waitUntilReady()
        let connection = client.connection

        async let inFlight = sendAll(TestRequests.posts(3, port: server.port), via: connection, on: client.loop)
        try await waitUntil(on: client.loop, "requests in flight") { connection.stats.inFlight == 3 }
        try client.loop.sync { connection.shutdown(gracePeriod: .milliseconds(200)) }

        let outcome = try await inFlight
        #expect(outcome.failures.count == 3)
        #expect(outcome.failures.allSatisfy { if case .shutdown = $0 { true } else { false } })
        #expect(try client.stats().state == .closed)
    }
}
