@testable import HTTP2
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime

/// `HTTP2ClientStateMachine` alone, in virtual time: every input in every state it acts in,
/// with the exact actions, timer deadlines and request outcomes it returns.
@Suite("Client state machine")
struct ClientStateMachineTests {
    private let t0: UInt64 = 1_000_000_000_000
    private static let second: UInt64 = 1_000_000_000

    private func configuration(maxQueued: Int = 100) -> HTTP2ConnectionConfiguration {
        HTTP2ConnectionConfiguration(host: "push.example", port: 443, connectTimeout: .seconds(10), maxQueuedRequests: maxQueued,
                                     idlePingInterval: .seconds(60), pingTimeout: .seconds(5), drainTimeout: .seconds(30),
                                     responseTimeout: .seconds(20))
    }

    /// A machine that has seen the server's SETTINGS with `limit`, with `open` requests opened as
    /// streams and `queued` more waiting.
    private func ready(limit: UInt32 = 100, queued: Int = 0, open: Int = 0, maxQueued: Int = 100) -> HTTP2ClientStateMachine {
        var machine = HTTP2ClientStateMachine(configuration: configuration(maxQueued: maxQueued))
        _ = machine.connectionStarted(now: t0)
        _ = machine.transportConnected()
        for _ in 0..<(queued + open) { _ = machine.requestArrived() }
        _ = machine.settingsReceived(maxConcurrentStreams: limit, now: t0)
        for _ in 0..<open { _ = machine.streamOpened(now: t0) }
        return machine
    }

    private func goaway(last: Int32, code: UInt32 = 0, reason: String? = "Shutdown") -> ReceivedGoaway {
        ReceivedGoaway(lastStreamID: last, errorCode: code, reason: reason)
    }

    // MARK: Connecting

    @Test func startingArmsTheConnectTimerAndQueuesRequests() {
        var machine = HTTP2ClientStateMachine(configuration: configuration(maxQueued: 2))
        let action = machine.connectionStarted(now: t0)
        #expect(action.timers[.connect] == .arm(at: t0 + 10 * Self.second))
        #expect(machine.state == .connecting)
        #expect(!machine.isWritable)
        #expect(machine.requestArrived().summary == "enqueue(0)")
        #expect(machine.requestArrived().summary == "enqueue(0)")
        #expect(machine.requestArrived().summary == "fail(request queue is full)")
        #expect(machine.queued == 2)
    }

    @Test func transportConnectedFlushesThePreface() {
        var machine = HTTP2ClientStateMachine(configuration: configuration())
        let action = machine.transportConnected()
        #expect(action.flush)
        #expect(machine.isWritable)
        #expect(machine.writeDrained().flush)
    }

    @Test func connectTimeoutNamesWhereItWasStuck() {
        var beforeTLS = HTTP2ClientStateMachine(configuration: configuration())
        let close = beforeTLS.connectTimedOut().close
        #expect(close == .init(error: .timeout("connecting to push.example:443 (DNS lookup, TCP, TLS handshake) took longer than 10.0 seconds"),
                               ending: .now))
        #expect(beforeTLS.state == .closed(close?.error))

        var afterTLS = HTTP2ClientStateMachine(configuration: configuration())
        _ = afterTLS.transportConnected()
        #expect(afterTLS.connectTimedOut().close?.error == .timeout("no HTTP/2 SETTINGS from push.example:443 within 10.0 seconds"))
        #expect(!afterTLS.writeDrained().flush, "nothing is written once closed")

        var isReady = ready()
        #expect(isReady.connectTimedOut().close == nil, "a late connect timer does nothing")
    }

    @Test func firstSettingsMakeTheConnectionReadyAndSubmitUpToTheLimit() {
        var machine = HTTP2ClientStateMachine(configuration: configuration())
        _ = machine.transportConnected()
        for _ in 0..<3 { _ = machine.requestArrived() }
        let action = machine.settingsReceived(maxConcurrentStreams: 2, now: t0 + 7)
        #expect(machine.state == .ready)
        #expect(machine.wasReady)
        #expect(action.requests.summary == "submit(2)")
        #expect(action.timers[.connect] == .cancel)
        #expect(action.timers[.idle] == .arm(at: t0 + 7 + 60 * Self.second))
        #expect(action.report == .ready)
        #expect(machine.streamsToOpen == 2)
    }

    // MARK: The stream-limit ramp

    @Test func streamLimitRampsFromOneStreamToMany() {
        var machine = ready(limit: 1, queued: 5)
        #expect(machine.streamsToOpen == 1)
        _ = machine.streamOpened(now: t0)
        #expect(machine.streamsToOpen == 0, "one stream until the server raises its limit")
        #expect(machine.requestArrived().summary == "enqueue(0)")

        let (outcome, afterFirst) = machine.streamClosed(streamID: 1, errorCode: 0, timedOut: false, hasResponse: true)
        #expect(outcome.summary == "response")
        #expect(afterFirst.requests.summary == "submit(1)", "the freed stream goes to the next queued request")
        _ = machine.streamOpened(now: t0)

        let raised = machine.settingsReceived(maxConcurrentStreams: 50, now: t0)
        #expect(raised.requests.summary == "submit(4)")
        #expect(raised.report == .none && raised.timers.isEmpty, "a later SETTINGS changes the limit only")
        for _ in 0..<4 { _ = machine.streamOpened(now: t0) }
        #expect(machine.inFlight == 5 && machine.queued == 0 && machine.peakInFlight == 5)
        #expect(machine.remoteMaxConcurrentStreams == 50)
        #expect(machine.completed == 1)
    }

    @Test func loweredLimitHoldsQueuedRequestsUntilStreamsEnd() {
        var machine = ready(limit: 10, queued: 6, open: 5)
        let lowered = machine.settingsReceived(maxConcurrentStreams: 3, now: t0)
        #expect(lowered.requests.summary == "none")
        #expect(machine.streamsToOpen == 0)
        for id in [1, 3] as [Int32] {
            #expect(machine.streamClosed(streamID: id, errorCode: 0, timedOut: false, hasResponse: true).1.requests.summary == "none")
        }
        #expect(machine.streamClosed(streamID: 5, errorCode: 0, timedOut: false, hasResponse: true).1.requests.summary == "submit(1)")
    }

    @Test func noLimitMeansEveryQueuedRequestGoes() {
        let machine = ready(limit: UInt32.max, queued: 40)
        #expect(machine.streamsToOpen == 40)
    }

    // MARK: Streams

    @Test func aClosedStreamsOutcomeFollowsItsErrorCode() {
        var machine = ready(queued: 5, open: 5)
        let outcomes = [
            machine.streamClosed(streamID: 1, errorCode: HTTP2ErrorCode.noError, timedOut: false, hasResponse: true),
            machine.streamClosed(streamID: 3, errorCode: HTTP2ErrorCode.refusedStream, timedOut: false, hasResponse: false),
            machine.streamClosed(streamID: 5, errorCode: HTTP2ErrorCode.cancel, timedOut: false, hasResponse: true),
            machine.streamClosed(streamID: 7, errorCode: HTTP2ErrorCode.noError, timedOut: false, hasResponse: false),
            machine.streamClosed(streamID: 9, errorCode: HTTP2ErrorCode.cancel, timedOut: true, hasResponse: false),
        ].map(\.0.summary)
        #expect(outcomes == ["response", "handBack(server refused the stream (REFUSED_STREAM))",
                             "fail(server reset the stream (code 8))", "fail(server reset the stream (code 0))",
                             "fail(no response within 20.0 seconds)"])
        #expect(machine.inFlight == 0 && machine.completed == 1)
    }

    @Test func submitFailuresFailTheRequestOrDrainWhenStreamIDsRunOut() {
        var machine = ready(queued: 3)
        let (failed, none) = machine.submitFailed(streamIDsExhausted: false, now: t0)
        #expect(failed.summary == "fail(server reset the stream (code 2))")
        #expect(none.report == .none && machine.state == .ready && machine.queued == 2)

        let (handedBack, drain) = machine.submitFailed(streamIDsExhausted: true, now: t0)
        #expect(handedBack.summary == "handBack(connection ran out of stream ids)")
        #expect(machine.state == .draining(.streamIDsExhausted))
        #expect(drain.requests.summary == "handBackQueued(connection ran out of stream ids)")
        #expect(drain.report == .draining)
        #expect(machine.requestArrived().summary == "handBack(connection ran out of stream ids)")
        #expect(machine.settled(sessionEndedWith: nil).close == .init(error: nil, ending: .afterPendingFrames))
    }

    @Test func responseTimerFollowsTheOldestStream() {
        var machine = ready(queued: 3)
        #expect(machine.streamOpened(now: t0 + 1) == .arm(at: t0 + 1 + 20 * Self.second))
        #expect(machine.streamOpened(now: t0 + 2) == .keep, "armed once, for the oldest stream")
        let due = machine.responseDeadlineReached(now: t0 + 20 * Self.second + 1)
        #expect(due.requests.summary == "resetOverdueStreams(\(t0 + 20 * Self.second + 1))")
        #expect(machine.responseDeadline(submittedAt: t0 + 2) == t0 + 2 + 20 * Self.second)
        let rearmed = machine.overdueStreamsReset(oldestRemainingSubmittedAt: t0 + 2)
        #expect(rearmed.timers[.response] == .arm(at: t0 + 2 + 20 * Self.second))
        #expect(machine.streamOpened(now: t0 + 3) == .keep)

        _ = machine.responseDeadlineReached(now: t0 + 30 * Self.second)
        #expect(machine.overdueStreamsReset(oldestRemainingSubmittedAt: nil).timers.isEmpty, "nothing left to watch")
        var idle = ready()
        #expect(idle.responseDeadlineReached(now: t0).requests.summary == "none", "no streams, nothing to reset")
    }

    // MARK: GOAWAY

    @Test func goawayDrainsHandsBackTheQueueAndSortsInFlightStreamsByLastStreamID() {
        var machine = ready(limit: 3, queued: 5, open: 3)
        let drain = machine.goawayReceived(goaway(last: 3), now: t0 + 5)
        #expect(machine.state == .draining(.goaway))
        #expect(drain.requests.summary == "handBackQueued(server sent GOAWAY (code 0): Shutdown)")
        #expect(drain.timers[.connect] == .cancel)
        #expect(drain.timers[.drain] == .arm(at: t0 + 5 + 30 * Self.second))
        #expect(drain.report == .draining)
        #expect(machine.queued == 0 && machine.streamsToOpen == 0)
        #expect(machine.requestArrived().summary == "handBack(server sent GOAWAY (code 0): Shutdown)")

        // Above the last-stream-id: refused and not processed; at or below: processed.
        #expect(machine.streamClosed(streamID: 5, errorCode: HTTP2ErrorCode.refusedStream, timedOut: false, hasResponse: false).0.summary
            == "handBack(server sent GOAWAY (code 0): Shutdown)")
        #expect(machine.settled(sessionEndedWith: nil).close == nil, "two streams still in flight")
        #expect(machine.streamClosed(streamID: 3, errorCode: HTTP2ErrorCode.cancel, timedOut: false, hasResponse: false).0.summary
            == "fail(server sent GOAWAY (code 0): Shutdown)")
        let last = machine.streamClosed(streamID: 1, errorCode: 0, timedOut: false, hasResponse: true)
        #expect(last.0.summary == "response")
        #expect(last.1.requests.summary == "none", "nothing is submitted while draining")
        #expect(machine.settled(sessionEndedWith: nil).close == .init(error: nil, ending: .afterPendingFrames))
        #expect(machine.state == .closed(nil))
    }

    @Test func secondGoawayLowersTheLastStreamIDWithoutANewDrain() {
        var machine = ready(open: 2)
        _ = machine.goawayReceived(goaway(last: 3), now: t0)
        let again = machine.goawayReceived(goaway(last: 1, code: 2, reason: nil), now: t0 + 1)
        #expect(again.report == .none && again.timers.isEmpty)
        #expect(machine.streamClosed(streamID: 3, errorCode: HTTP2ErrorCode.refusedStream, timedOut: false, hasResponse: false).0.summary
            == "handBack(server sent GOAWAY (code 2))")
    }

    @Test func goawayWhileConnectingDrainsToo() {
        var machine = HTTP2ClientStateMachine(configuration: configuration())
        _ = machine.transportConnected()
        _ = machine.requestArrived()
        let drain = machine.goawayReceived(goaway(last: 0), now: t0)
        #expect(drain.requests.summary == "handBackQueued(server sent GOAWAY (code 0): Shutdown)")
        #expect(!machine.wasReady)
        #expect(machine.settled(sessionEndedWith: nil).close == .init(error: nil, ending: .afterPendingFrames))
    }

    @Test func drainTimeoutClosesWithTheStreamsStillOpen() {
        var machine = ready(open: 2)
        _ = machine.goawayReceived(goaway(last: 3), now: t0)
        let close = machine.drainTimedOut().close
        #expect(close == .init(error: .timeout("streams on push.example:443 still open 30.0 seconds after the connection began draining"),
                               ending: .now))
        #expect(machine.drainTimedOut().close == nil)
    }

    // MARK: Shutdown

    @Test func shutdownFailsTheQueueAndWaitsForInFlightStreamsBeforeGoaway() {
        var machine = ready(limit: 1, queued: 3, open: 1)
        let action = machine.shutdownRequested(gracePeriod: .seconds(2), now: t0)
        #expect(machine.state == .draining(.shutdown))
        #expect(action.requests.summary == "failQueued(client is shut down)")
        #expect(action.frame == .none, "no GOAWAY while a stream is open: a server may stop answering after it")
        #expect(action.timers[.drain] == .arm(at: t0 + 2 * Self.second))
        #expect(action.timers[.connect] == .cancel)
        #expect(action.report == .draining)
        #expect(machine.requestArrived().summary == "fail(client is shut down)")
        #expect(machine.settled(sessionEndedWith: nil).close == nil)
        #expect(machine.shutdownRequested(gracePeriod: nil, now: t0).frame == .none, "a second shutdown does nothing")

        let timedOut = machine.drainTimedOut()
        #expect(timedOut.requests.summary == "failInFlight(client is shut down)")
        #expect(timedOut.close == .init(error: nil, ending: .afterWrittenOutput), "a shutdown ends cleanly, even late")
    }

    /// A connection the pool replaces (a new provider token): it opens no new stream, its queue
    /// goes back to the pool, its streams in flight finish with their answers, and only after the
    /// last one the server gets GOAWAY (a server may stop answering after a client's GOAWAY).
    @Test func aRetiredConnectionHandsBackItsQueueLetsItsStreamsFinishThenSaysGoaway() {
        var machine = ready(limit: 4, queued: 3, open: 2)
        let action = machine.retireRequested(now: t0)
        #expect(machine.state == .draining(.retired))
        #expect(action.requests.summary == "handBackQueued(the connection is being replaced)")
        #expect(action.frame == .none && action.report == .draining)
        #expect(action.timers[.drain] == .arm(at: t0 + 30 * Self.second))
        #expect(machine.streamsToOpen == 0 && machine.queued == 0, "free stream slots stay unused")
        #expect(machine.requestArrived().summary == "handBack(the connection is being replaced)")
        #expect(machine.settled(sessionEndedWith: nil).close == nil, "streams are still in flight")
        let first = machine.streamClosed(streamID: 1, errorCode: 0, timedOut: false, hasResponse: true)
        #expect(first.0.summary == "response" && first.1.requests.summary == "none" && first.1.frame == .none)
        #expect(machine.settled(sessionEndedWith: nil).close == nil, "one stream is still in flight")
        #expect(machine.streamClosed(streamID: 3, errorCode: 0, timedOut: false, hasResponse: true).0.summary == "response")
        let end = machine.settled(sessionEndedWith: nil)
        #expect(end.frame == .goaway, "GOAWAY once the last answer is in")
        #expect(end.close == .init(error: nil, ending: .afterPendingFrames), "written before the connection closes")
        #expect(machine.retireRequested(now: t0).report == .none, "retiring a closed connection does nothing")
    }

    /// Streams of a retired connection still open when the drain timeout passes were sent and
    /// may have been processed: the close says they were lost after sending, never unprocessed.
    @Test func aRetiredConnectionsDrainTimeoutClosesWithStreamsLostAfterSending() {
        var machine = ready(open: 1)
        _ = machine.retireRequested(now: t0)
        let timedOut = machine.drainTimedOut()
        #expect(timedOut.frame == .none)
        #expect(timedOut.close?.ending == .now)
        #expect(machine.outcomeAtClose(streamID: 1, headersSent: true).summary.hasPrefix("handBack(connectionLost(timed out: streams on"))
        #expect(machine.outcomeAtClose(streamID: 1, headersSent: true).summary.hasSuffix("wasSent: true))"))
    }

    @Test func shutdownWithNothingInFlightClosesAtOnceWithGoaway() {
        var machine = ready()
        #expect(machine.shutdownRequested(gracePeriod: nil, now: t0).timers[.drain] == .arm(at: t0 + 30 * Self.second))
        let end = machine.settled(sessionEndedWith: nil)
        #expect(end.close == .init(error: nil, ending: .afterPendingFrames) && end.frame == .goaway)
    }

    /// A drain the server started (its GOAWAY) ends without one of the client's.
    @Test func aGoawayDrainEndsWithoutTheClientsGoaway() {
        var machine = ready(open: 1)
        _ = machine.goawayReceived(goaway(last: 1), now: t0)
        _ = machine.streamClosed(streamID: 1, errorCode: 0, timedOut: false, hasResponse: true)
        let end = machine.settled(sessionEndedWith: nil)
        #expect(end.close == .init(error: nil, ending: .afterPendingFrames) && end.frame == .none)
    }

    @Test func shutdownDuringAGoawayDrainTakesOverWithoutASecondReport() {
        var machine = ready(open: 1)
        _ = machine.goawayReceived(goaway(last: 1), now: t0)
        let action = machine.shutdownRequested(gracePeriod: .seconds(1), now: t0 + 1)
        #expect(action.report == .none)
        #expect(action.frame == .none)
        #expect(action.timers[.drain] == .arm(at: t0 + 1 + Self.second))
        #expect(machine.state == .draining(.shutdown))
        #expect(machine.requestArrived().summary == "fail(client is shut down)")
    }

    // MARK: PING

    @Test func idleConnectionIsPingedOnceAndClosedWithoutAnAcknowledgement() {
        var machine = ready()
        let first = machine.idleCheck(now: t0 + 60 * Self.second)
        #expect(first.frame == .ping)
        #expect(first.timers[.ping] == .arm(at: t0 + 65 * Self.second))
        #expect(first.timers[.idle] == .arm(at: t0 + 120 * Self.second))
        #expect(machine.awaitingPingAck)

        let second = machine.idleCheck(now: t0 + 120 * Self.second)
        #expect(second.frame == .none, "one PING at a time")
        #expect(second.timers[.idle] == .arm(at: t0 + 180 * Self.second))

        #expect(machine.pingTimedOut().close == .init(error: .timeout("no PING acknowledgement from push.example:443 within 5.0 seconds"),
                                                      ending: .now))
    }

    @Test func acknowledgedPingCancelsItsTimerAndTrafficPostponesTheNext() {
        var machine = ready()
        _ = machine.idleCheck(now: t0)
        #expect(machine.pingAcknowledged().timers[.ping] == .cancel)
        #expect(machine.pingAcknowledged().timers.isEmpty, "an unsolicited acknowledgement changes nothing")
        #expect(machine.pingTimedOut().close == nil, "a late PING timer does nothing once acknowledged")

        machine.inputReceived()
        #expect(machine.idleCheck(now: t0 + 60 * Self.second).frame == .none, "traffic since the last check: not idle")
        _ = machine.requestArrived()
        _ = machine.streamOpened(now: t0)
        #expect(machine.idleCheck(now: t0 + 120 * Self.second).frame == .none, "a submit counts as traffic")
        #expect(machine.idleCheck(now: t0 + 180 * Self.second).frame == .ping)
    }

    @Test func idleChecksWaitForReadinessAndContinueWhileDraining() {
        var connecting = HTTP2ClientStateMachine(configuration: configuration())
        #expect(connecting.idleCheck(now: t0).timers.isEmpty)
        var draining = ready(open: 1)
        _ = draining.goawayReceived(goaway(last: 1), now: t0)
        #expect(draining.idleCheck(now: t0).frame == .none, "the stream's submit was traffic")
        #expect(draining.idleCheck(now: t0 + 60 * Self.second).frame == .ping)
    }

    // MARK: Closing

    @Test func failuresCloseAtOnceWithTheirError() {
        var transport = ready()
        #expect(transport.transportClosed(.closedByPeer).close == .init(error: .closedByPeer, ending: .now))
        var session = ready()
        #expect(session.sessionFailed(.socket("bad frame")).close?.error == .socket("bad frame"))
        var local = ready()
        #expect(local.closeRequested().close?.error == .closedLocally)
        var ended = ready(open: 1)
        #expect(ended.settled(sessionEndedWith: "GOAWAY received with an error").close
            == .init(error: .socket("HTTP/2 protocol error with push.example:443: GOAWAY received with an error"), ending: .now))
        #expect(ended.settled(sessionEndedWith: nil).close == nil, "an open session and streams in flight: nothing to do")
    }

    @Test func aClosedConnectionHandsBackNewRequestsAndIgnoresEveryInput() {
        var machine = ready(queued: 2, open: 1)
        _ = machine.transportClosed(.closedByPeer)
        #expect(machine.state == .closed(.closedByPeer))
        #expect(machine.closeError == .closedByPeer)
        #expect(machine.inFlight == 0 && machine.queued == 0)
        #expect(machine.requestArrived().summary == "handBack(connectionLost(connection closed by peer, wasSent: false))")
        #expect(machine.closeRequested().close == nil, "closed once")
        #expect(machine.settingsReceived(maxConcurrentStreams: 5, now: t0).report == .none)
        #expect(machine.goawayReceived(goaway(last: 1), now: t0).report == .none)
        #expect(machine.idleCheck(now: t0).timers.isEmpty)
        #expect(machine.drainTimedOut().close == nil)
        #expect(machine.shutdownRequested(gracePeriod: nil, now: t0).frame == .none)
        #expect(!machine.transportConnected().flush)
        // A stream nghttp2 closed just before keeps its outcome but no longer counts.
        #expect(machine.streamClosed(streamID: 1, errorCode: 0, timedOut: false, hasResponse: true).0.summary == "response")
        #expect(machine.inFlight == 0)
    }

    @Test func requestsStillHeldAtCloseAreSortedByGoawayAndWhetherTheyWereSent() {
        var plain = ready(open: 2)
        _ = plain.sessionFailed(.socket("reset"))
        #expect(plain.outcomeAtClose(streamID: 1, headersSent: true).summary
            == "handBack(connectionLost(connection failed: reset, wasSent: true))")
        #expect(plain.outcomeAtClose(streamID: 3, headersSent: false).summary
            == "handBack(connectionLost(connection failed: reset, wasSent: false))")

        var afterGoaway = ready(open: 3)
        _ = afterGoaway.goawayReceived(goaway(last: 3, code: 2, reason: "InternalServerError"), now: t0)
        _ = afterGoaway.drainTimedOut()
        #expect(afterGoaway.outcomeAtClose(streamID: 3, headersSent: true).summary == "fail(server sent GOAWAY (code 2): InternalServerError)")
        #expect(afterGoaway.outcomeAtClose(streamID: 5, headersSent: true).summary == "handBack(server sent GOAWAY (code 2): InternalServerError)")
        #expect(afterGoaway.outcomeAtClose(streamID: 7, headersSent: false).summary.hasPrefix("handBack(connectionLost(timed out: streams on"))

        var clean = ready()
        _ = clean.shutdownRequested(gracePeriod: nil, now: t0)
        _ = clean.settled(sessionEndedWith: nil)
        #expect(clean.state == .closed(nil))
        #expect(clean.outcomeAtClose(streamID: 1, headersSent: false).summary
            == "handBack(connectionLost(connection closed locally, wasSent: false))")
    }
}

// MARK: - Readable summaries of the machine's answers

extension HTTP2StreamOutcome {
    var summary: String {
        switch self {
        case .response: "response"
        case .fail(let error): "fail(\(error))"
        case .handBack(let reason): "handBack(\(reason.summary))"
        }
    }
}

extension HTTP2RetryReason {
    var summary: String {
        if case .connectionLost(let error, let wasSent) = self { "connectionLost(\(error), wasSent: \(wasSent))" } else { "\(self)" }
    }
}

extension HTTP2RequestAdmission {
    var summary: String {
        switch self {
        case .enqueue(let submitNow): "enqueue(\(submitNow))"
        case .fail(let error): "fail(\(error))"
        case .handBack(let reason): "handBack(\(reason.summary))"
        }
    }
}

extension HTTP2ClientAction.Requests {
    var summary: String {
        switch self {
        case .none: "none"
        case .submit(let count): "submit(\(count))"
        case .handBackQueued(let reason): "handBackQueued(\(reason.summary))"
        case .failQueued(let error): "failQueued(\(error))"
        case .failInFlight(let error): "failInFlight(\(error))"
        case .resetOverdueStreams(let now): "resetOverdueStreams(\(now))"
        }
    }
}
