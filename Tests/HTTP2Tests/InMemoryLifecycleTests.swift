import CNGHTTP2
@testable import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

/// The connection's lifecycle against an in-memory nghttp2 server, in virtual time: GOAWAY with
/// streams in flight, graceful shutdown, idle PINGs and their timeout, the response timeout, the
/// SETTINGS timeout and protocol errors. Deadlines are hit to the nanosecond: one tick before,
/// nothing has happened yet.
@Suite("Client lifecycle in memory")
struct InMemoryLifecycleTests {
    private let port = 8443

    private func isGoaway(_ error: HTTP2RequestError, code: UInt32, reason: String) -> Bool {
        if case .goaway(code, reason) = error { true } else { false }
    }

    // MARK: GOAWAY

    @Test func goawayHandsBackStreamsAboveLastStreamIDAndCompletesTheRest() {
        let owner = RecordingOwner()
        let link = InMemoryConnection(delegate: owner)
        link.connect()
        link.send(TestRequests.posts(8, port: port))
        #expect(link.server.waiting.map(\.streamID) == [1, 3, 5, 7, 9, 11, 13, 15])

        link.server.respond(to: 1)
        link.server.respond(to: 3)
        link.server.sendGoaway(lastStreamID: 7)
        link.pump()
        #expect(link.state == .draining)
        #expect(owner.drainingCount == 1)
        // nghttp2 closes the streams above the last-stream-id in an order of its own.
        #expect(owner.handedBack.map(\.path).sorted() == ["/echo/4", "/echo/5", "/echo/6", "/echo/7"], "streams 9 to 15 were not processed")
        #expect(owner.handedBack.allSatisfy { if case .goaway(0, "Shutdown") = $0.reason { true } else { false } })
        #expect(link.stats.inFlight == 2)

        link.send(TestRequests.posts(1, port: port))
        #expect(owner.handedBack.count == 5, "a draining connection hands new requests back at once")

        link.server.respond(to: 5)
        link.server.respond(to: 7)
        link.pump()
        #expect(link.successes.count == 4)
        #expect(link.results.prefix(4).allSatisfy { (try? $0?.get())?.status == 200 })
        #expect(link.state == .closed)
        #expect(owner.closes.count == 1 && owner.closes.first?.error == nil && owner.closes.first?.wasReady == true,
                "a drained connection closes cleanly: \(owner.closes)")
        #expect(link.transport.closedAfterOutput)
    }

    @Test func unansweredStreamsAtOrBelowLastStreamIDFailWithTheGoaway() {
        let link = InMemoryConnection()
        link.connect()
        link.send(TestRequests.posts(6, port: port))

        link.server.sendGoaway(lastStreamID: 5, errorCode: NGHTTP2_INTERNAL_ERROR.rawValue, debugData: #"{"reason": "InternalServerError"}"#)
        link.pump()
        #expect(link.failures.count == 3, "standalone, the unprocessed requests fail with the GOAWAY at once")
        link.closeFromServer()

        #expect(link.failures.count == 6)
        #expect(link.failures.allSatisfy { isGoaway($0, code: NGHTTP2_INTERNAL_ERROR.rawValue, reason: "InternalServerError") },
                "\(link.failures)")
        #expect(link.connection.closeError == .closedByPeer)
    }

    // MARK: Shutdown

    @Test func gracefulShutdownLetsInFlightStreamsFinish() {
        let owner = RecordingOwner()
        let link = InMemoryConnection(delegate: owner)
        link.connect()
        link.send(TestRequests.posts(5, port: port))

        link.connection.shutdown(gracePeriod: .seconds(5))
        link.pump()
        link.send(TestRequests.posts(1, port: port))
        #expect(link.server.stats.goawaysReceived == 0, "no GOAWAY while streams are open")
        #expect(link.state == .draining && owner.drainingCount == 1)
        if case .shutdown = link.failures.first {} else { Issue.record("expected .shutdown, got \(link.failures)") }

        link.serveAll()
        #expect(link.successes.count == 5)
        #expect(link.server.stats.goawaysReceived == 1, "GOAWAY after the last answer")
        #expect(link.state == .closed)
        #expect(owner.closes.count == 1 && owner.closes.first?.error == nil)
    }

    /// Retiring (the pool's key rotation): no new stream opens, the queue goes back to the owner
    /// at once, the streams in flight are answered, and GOAWAY reaches the server only after the
    /// last answer, so a server that stops answering after a client's GOAWAY loses none of them.
    @Test func aRetiredConnectionSaysGoawayOnlyAfterItsLastAnswer() {
        let owner = RecordingOwner()
        let link = InMemoryConnection(server: InMemoryServer(maxConcurrentStreams: 3), delegate: owner)
        link.connect()
        link.send(TestRequests.posts(5, port: port))
        #expect(link.server.waiting.count == 3 && link.stats.queued == 2)

        link.connection.retire()
        link.pump()
        #expect(owner.handedBack.map(\.path) == ["/echo/3", "/echo/4"], "the queue goes back to the owner at once")
        #expect(owner.handedBack.allSatisfy { if case .retired = $0.reason { true } else { false } })
        #expect(link.state == .draining && link.server.stats.goawaysReceived == 0)

        link.server.respond(to: 1)
        link.pump()
        #expect(link.server.waiting.count == 2, "a freed stream slot takes nothing new")
        #expect(link.server.stats.requestsReceived == 3 && link.server.stats.goawaysReceived == 0)
        link.server.respond(to: 3)
        link.server.respond(to: 5)
        link.pump()
        #expect(link.successes.count == 3)
        #expect(link.server.stats.goawaysReceived == 1)
        #expect(link.state == .closed && owner.closes.count == 1 && owner.closes.first?.error == nil)
        #expect(link.transport.closedAfterOutput)
    }

    @Test func shutdownFailsStreamsStillOpenAfterTheGracePeriod() {
        let link = InMemoryConnection()
        link.connect()
        link.send(TestRequests.posts(3, port: port))

        link.connection.shutdown(gracePeriod: .milliseconds(200))
        link.advance(by: .milliseconds(200) - .nanoseconds(1))
        #expect(link.state == .draining && link.pending == 3)
        link.advance(by: .nanoseconds(1))

        #expect(link.failures.count == 3)
        #expect(link.failures.allSatisfy { if case .shutdown = $0 { true } else { false } })
        #expect(link.state == .closed && link.connection.closeError == nil)
    }

    // MARK: PING

    private func pinging(answerPings: Bool, delegate: HTTP2ClientConnectionDelegate? = nil) -> InMemoryConnection {
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: port)
        configuration.idlePingInterval = .milliseconds(100)
        configuration.pingTimeout = .milliseconds(300)
        let link = InMemoryConnection(configuration: configuration,
                                      server: InMemoryServer(maxConcurrentStreams: 100, answerPings: answerPings), delegate: delegate)
        link.connect()
        return link
    }

    @Test func idleConnectionIsPingedAndStaysOpenWhenAnswered() {
        let link = pinging(answerPings: true)
        link.advance(by: .seconds(1))
        // Checks every 100 ms; an acknowledgement is traffic, so every other check finds the connection idle.
        #expect(link.server.stats.pingsReceived == 5)
        #expect(link.state == .ready)
        link.send(TestRequests.posts(1, port: port))
        link.serveAll()
        #expect(link.successes.count == 1)
    }

    @Test func unansweredPingClosesTheConnectionWithATimeout() {
        let owner = RecordingOwner()
        let link = pinging(answerPings: false, delegate: owner)
        link.advance(by: .milliseconds(100))
        #expect(link.server.stats.pingsReceived == 1)
        link.advance(by: .milliseconds(300) - .nanoseconds(1))
        #expect(link.state == .ready)
        link.advance(by: .nanoseconds(1))

        #expect(link.state == .closed)
        let expected = TransportError.timeout("no PING acknowledgement from 127.0.0.1:\(port) within \(Duration.milliseconds(300))")
        #expect(link.connection.closeError == expected)
        #expect(owner.closes.count == 1 && owner.closes.first?.error == expected && owner.closes.first?.wasReady == true)
        #expect(link.server.stats.pingsReceived == 1, "one PING at a time")
    }

    @Test func busyConnectionIsNotPinged() {
        let link = pinging(answerPings: false)
        for _ in 0..<40 {
            link.send(TestRequests.posts(1, port: port))
            link.advance(by: .milliseconds(50))
            link.serveAll()
        }
        #expect(link.successes.count == 40)
        #expect(link.server.stats.pingsReceived == 0)
        #expect(link.state == .ready)
    }

    // MARK: Response timeout

    @Test func overdueStreamsAreResetAndFailWhileTheConnectionStays() {
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: port)
        configuration.responseTimeout = .seconds(2)
        let link = InMemoryConnection(configuration: configuration)
        link.connect()
        link.send(TestRequests.posts(1, port: port))
        link.advance(by: .seconds(1))
        link.send(TestRequests.posts(2, port: port))
        link.server.respond(to: 5)
        link.pump()

        link.advance(by: .seconds(1) - .nanoseconds(1))
        #expect(link.pending == 2)
        link.advance(by: .nanoseconds(1))
        guard case .failure(.timedOut(let after)) = link.results[0] else {
            Issue.record("expected .timedOut, got \(String(describing: link.results[0]))")
            return
        }
        #expect(after == .seconds(2))
        #expect(link.results[1] == nil, "the younger stream has a second left")
        #expect(link.server.stats.resetsReceived == [NGHTTP2_CANCEL.rawValue: 1])

        link.advance(by: .seconds(1))
        if case .failure(.timedOut) = link.results[1] {} else { Issue.record("expected .timedOut, got \(String(describing: link.results[1]))") }
        #expect((try? link.results[2]?.get())?.status == 200, "an answered stream is not reset")
        #expect(link.server.stats.resetsReceived == [NGHTTP2_CANCEL.rawValue: 2])
        #expect(link.state == .ready && link.stats.inFlight == 0)

        link.send(TestRequests.posts(1, port: port))
        link.serveAll()
        #expect(link.successes.count == 2, "the connection is still usable")
    }

    // MARK: Connecting and failing

    @Test func serverThatNeverSendsSettingsTimesOut() {
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: port)
        configuration.connectTimeout = .milliseconds(500)
        let link = InMemoryConnection(configuration: configuration)
        link.serverIsSilent = true
        link.send(TestRequests.posts(2, port: port))
        link.connect()

        link.advance(by: .milliseconds(500) - .nanoseconds(1))
        #expect(link.state == .connecting && link.pending == 2)
        link.advance(by: .nanoseconds(1))

        let expected = TransportError.timeout("no HTTP/2 SETTINGS from 127.0.0.1:\(port) within \(Duration.milliseconds(500))")
        #expect(link.connection.closeError == expected)
        #expect(link.failures.map(\.transportError) == [expected, expected])
    }

    @Test func serverSendingSomethingElseThanHTTP2GivesAProtocolError() {
        let link = InMemoryConnection()
        link.serverIsSilent = true
        link.send(TestRequests.posts(1, port: port))
        link.connect()
        Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8).withUnsafeBytes { link.connection.transportDidRead($0) }
        link.pump()

        guard case .socket(let reason) = link.connection.closeError else {
            Issue.record("expected a protocol error, got \(String(describing: link.connection.closeError))")
            return
        }
        #expect(reason.contains("HTTP/2 protocol error"))
        #expect(reason.contains("SETTINGS"), "nghttp2 names what it expected")
        #expect(link.failures.first?.transportError == .socket(reason))
        #expect(link.state == .closed)
    }

    @Test func lostConnectionHandsBackOnlyWhatWasNeverSent() {
        let owner = RecordingOwner()
        let link = InMemoryConnection(server: InMemoryServer(maxConcurrentStreams: 2), delegate: owner)
        link.connect()
        link.send(TestRequests.posts(3, port: port))
        link.closeFromServer()

        let reasons = owner.handedBack.map { handedBack -> String in
            if case .connectionLost(let error, let wasSent) = handedBack.reason { "\(handedBack.path) \(error) sent: \(wasSent)" } else { "\(handedBack)" }
        }
        #expect(reasons == ["/echo/0 connection closed by peer sent: true", "/echo/1 connection closed by peer sent: true",
                            "/echo/2 connection closed by peer sent: false"])
        #expect(owner.closes.count == 1 && owner.closes.first?.error == .closedByPeer)
    }

    @Test func requestsOnAClosedConnectionFailWithItsError() {
        let link = InMemoryConnection()
        link.connect()
        link.connection.close()
        link.send(TestRequests.posts(1, port: port))
        #expect(link.failures.first?.transportError == .closedLocally)
        #expect(link.transport.isClosed && !link.transport.closedAfterOutput)
    }
}
