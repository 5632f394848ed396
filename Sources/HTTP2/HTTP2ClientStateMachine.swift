import TouchlineCore
import TouchlineRuntime

/// The lifecycle of one HTTP/2 client connection as a value: inputs in, actions out.
///
/// `connecting → ready → draining(reason) → closed(error)`; any state may close. It decides when
/// the connection is ready, how many queued requests may be opened as streams under the
/// server's current SETTINGS_MAX_CONCURRENT_STREAMS (APNs starts at 1 and raises it), what
/// becomes of a request whose stream ended or that is still held when the connection goes,
/// when to PING, and which timer runs until when. It does no I/O and reads no clock: the times
/// come in the inputs (`now`, monotonic nanoseconds), so tests run it in virtual time.
/// ``HTTP2ClientConnection`` feeds it what nghttp2, the transport and the timers report, and
/// performs the ``HTTP2ClientAction`` each input returns.
///
/// It counts requests (queued, in flight) but holds none: the shell keeps the objects, in the
/// same order, and asks ``streamsToOpen`` before each submit.
struct HTTP2ClientStateMachine {
    enum State: Equatable {
        /// DNS, TCP, TLS and waiting for the server's SETTINGS; requests queue meanwhile.
        case connecting
        case ready
        /// No new requests; closes once the in-flight streams have ended or the drain timer fires.
        case draining(DrainReason)
        /// For good; the error is nil after a clean drain.
        case closed(TransportError?)
    }

    enum DrainReason: Equatable {
        /// The server sent GOAWAY (see ``goaway``).
        case goaway
        /// nghttp2 has no stream id left for this connection.
        case streamIDsExhausted
        /// ``HTTP2ClientConnection/shutdown(gracePeriod:)``: later requests fail with `.shutdown`,
        /// and streams still open when the grace period ends fail with it too.
        case shutdown
        /// ``HTTP2ClientConnection/retire()``: replaced by a new connection; later requests go
        /// back to the pool, streams in flight finish.
        case retired

        /// The client chose to leave (shutdown, retirement): it tells the server with GOAWAY once
        /// its last stream has ended, never before. A client's GOAWAY tells a server nothing it
        /// needs while streams are open (this client takes no server push), and some servers stop
        /// answering the streams still open once they see it: those answers would be lost, and
        /// requests the server did process would look unanswered.
        var saysGoawayAtTheEnd: Bool { self == .shutdown || self == .retired }
    }

    private(set) var state = State.connecting
    /// The TLS handshake finished: frames may be written.
    private(set) var isTransportConnected = false
    /// The connection became ready at some point (a pool resets its back-off only then).
    private(set) var wasReady = false
    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS; 0 until its first SETTINGS.
    private(set) var remoteMaxConcurrentStreams: UInt32 = 0
    /// The last GOAWAY received: streams above its last-stream-id were not processed.
    private(set) var goaway: ReceivedGoaway?
    /// Requests waiting for a stream, and streams submitted and not yet resolved.
    private(set) var queued = 0
    private(set) var inFlight = 0
    private(set) var peakInFlight = 0
    /// Requests answered with a response.
    private(set) var completed = 0
    private(set) var awaitingPingAck = false

    private let configuration: HTTP2ConnectionConfiguration
    private let peerName: String
    /// Inputs seen (reads, submits); the idle check compares it between two checks.
    private var activity = 0
    private var activityAtLastIdleCheck = 0
    private var responseTimerArmed = false

    init(configuration: HTTP2ConnectionConfiguration) {
        self.configuration = configuration
        peerName = "\(configuration.host):\(configuration.port)"
    }

    var isClosed: Bool {
        if case .closed = state { true } else { false }
    }

    /// The error the connection closed with; nil while open or after a clean drain.
    var closeError: TransportError? {
        if case .closed(let error) = state { error } else { nil }
    }

    /// Frames may be encoded and written.
    var isWritable: Bool { isTransportConnected && !isClosed }

    /// How many queued requests may become streams now.
    var streamsToOpen: Int {
        guard case .ready = state, queued > 0 else { return 0 }
        let free = Int(remoteMaxConcurrentStreams) - inFlight
        return free > 0 ? min(free, queued) : 0
    }

    /// When a stream submitted at `submittedAt` is overdue.
    func responseDeadline(submittedAt: UInt64) -> UInt64 {
        submittedAt &+ nanoseconds(configuration.responseTimeout)
    }

    // MARK: Connecting

    /// The transport started connecting.
    mutating func connectionStarted(now: UInt64) -> HTTP2ClientAction {
        var action = HTTP2ClientAction()
        action.timers[.connect] = .arm(at: now &+ nanoseconds(configuration.connectTimeout))
        return action
    }

    /// TLS is up and h2 negotiated: the preface and SETTINGS may go out.
    mutating func transportConnected() -> HTTP2ClientAction {
        guard !isClosed else { return .none }
        isTransportConnected = true
        var action = HTTP2ClientAction()
        action.flush = true
        return action
    }

    mutating func connectTimedOut() -> HTTP2ClientAction {
        guard state == .connecting else { return .none }
        return close(.timeout(isTransportConnected
            ? "no HTTP/2 SETTINGS from \(peerName) within \(configuration.connectTimeout)"
            : "connecting to \(peerName) (DNS lookup, TCP, TLS handshake) took longer than \(configuration.connectTimeout)"),
            .now)
    }

    /// A SETTINGS frame (not an ACK) arrived; `maxConcurrentStreams` is the server's limit now.
    /// The first one makes the connection ready; a raised limit lets queued requests go.
    mutating func settingsReceived(maxConcurrentStreams: UInt32, now: UInt64) -> HTTP2ClientAction {
        guard !isClosed else { return .none }
        remoteMaxConcurrentStreams = maxConcurrentStreams
        var action = HTTP2ClientAction()
        if state == .connecting {
            state = .ready
            wasReady = true
            activityAtLastIdleCheck = activity
            action.timers[.connect] = .cancel
            action.timers[.idle] = .arm(at: now &+ nanoseconds(configuration.idlePingInterval))
            action.report = .ready
        }
        let count = streamsToOpen
        if count > 0 { action.requests = .submit(count: count) }
        return action
    }

    // MARK: Requests and streams

    /// A request was given to the connection.
    mutating func requestArrived() -> HTTP2RequestAdmission {
        switch state {
        case .connecting, .ready:
            guard queued < configuration.maxQueuedRequests else { return .fail(.queueFull) }
            queued += 1
            return .enqueue(submitNow: streamsToOpen)
        case .draining(.shutdown):
            return .fail(.shutdown)
        case .draining(let reason):
            return .handBack(retryReason(for: reason))
        case .closed(let error):
            return .handBack(.connectionLost(error ?? .closedLocally, wasSent: false))
        }
    }

    /// The first queued request was submitted as a stream. The response timer runs while any
    /// stream is open (it is armed for the oldest; ``overdueStreamsReset(oldestRemainingSubmittedAt:)`` re-arms it).
    mutating func streamOpened(now: UInt64) -> TimerChange {
        queued -= 1
        inFlight += 1
        peakInFlight = max(peakInFlight, inFlight)
        activity &+= 1
        guard inFlight == 1, !responseTimerArmed else { return .keep }
        responseTimerArmed = true
        return .arm(at: now &+ nanoseconds(configuration.responseTimeout))
    }

    /// nghttp2 would not take the first queued request. When it has no stream id left the
    /// connection drains (the request and the queue go elsewhere); otherwise the request fails.
    mutating func submitFailed(streamIDsExhausted: Bool, now: UInt64) -> (HTTP2StreamOutcome, HTTP2ClientAction) {
        queued -= 1
        guard streamIDsExhausted else {
            return (.fail(.streamReset(errorCode: HTTP2ErrorCode.internalError)), .none)
        }
        return (.handBack(.streamIDsExhausted), startDraining(.streamIDsExhausted, now: now))
    }

    /// A stream ended: what becomes of its request, and whether queued requests may use the
    /// freed slot. `timedOut`: the connection reset it after the response timeout;
    /// `hasResponse`: a status line arrived.
    mutating func streamClosed(streamID: Int32, errorCode: UInt32, timedOut: Bool, withheld: Bool = false,
                               hasResponse: Bool) -> (HTTP2StreamOutcome, HTTP2ClientAction) {
        if !isClosed { inFlight -= 1 }
        let outcome: HTTP2StreamOutcome
        if withheld {
            outcome = .fail(.withheld)
        } else if timedOut {
            outcome = .fail(.timedOut(after: configuration.responseTimeout))
        } else if errorCode == HTTP2ErrorCode.noError, hasResponse {
            completed += 1
            outcome = .response
        } else if errorCode == HTTP2ErrorCode.refusedStream {
            if let goaway, streamID > goaway.lastStreamID {
                outcome = .handBack(.goaway(errorCode: goaway.errorCode, reason: goaway.reason))
            } else {
                outcome = .handBack(.refusedStream)
            }
        } else if let goaway, streamID <= goaway.lastStreamID {
            outcome = .fail(.goaway(errorCode: goaway.errorCode, reason: goaway.reason))
        } else {
            outcome = .fail(.streamReset(errorCode: errorCode))
        }
        var action = HTTP2ClientAction()
        let count = streamsToOpen
        if count > 0 { action.requests = .submit(count: count) }
        return (outcome, action)
    }

    /// What becomes of a request still in flight when the connection closes: processed by the
    /// server (at or below a GOAWAY's last-stream-id) it fails; provably unprocessed it goes back;
    /// otherwise it goes back marked with whether its HEADERS were sent (then the owner must not
    /// repeat it).
    func outcomeAtClose(streamID: Int32, headersSent: Bool) -> HTTP2StreamOutcome {
        if let goaway, streamID <= goaway.lastStreamID {
            return .fail(.goaway(errorCode: goaway.errorCode, reason: goaway.reason))
        }
        if let goaway, headersSent {
            return .handBack(.goaway(errorCode: goaway.errorCode, reason: goaway.reason))
        }
        return .handBack(.connectionLost(closeError ?? .closedLocally, wasSent: headersSent))
    }

    /// The response timer fired.
    mutating func responseDeadlineReached(now: UInt64) -> HTTP2ClientAction {
        responseTimerArmed = false
        guard !isClosed, inFlight > 0 else { return .none }
        var action = HTTP2ClientAction()
        action.requests = .resetOverdueStreams(now: now)
        return action
    }

    /// The overdue streams were reset; the timer follows the oldest stream left, if any.
    mutating func overdueStreamsReset(oldestRemainingSubmittedAt: UInt64?) -> HTTP2ClientAction {
        guard !isClosed, let oldest = oldestRemainingSubmittedAt, !responseTimerArmed else { return .none }
        responseTimerArmed = true
        var action = HTTP2ClientAction()
        action.timers[.response] = .arm(at: responseDeadline(submittedAt: oldest))
        return action
    }

    // MARK: Liveness

    /// Bytes arrived from the server: the connection is not idle.
    mutating func inputReceived() {
        activity &+= 1
    }

    /// The idle timer fired: PING if nothing happened since the last check and no PING is out.
    mutating func idleCheck(now: UInt64) -> HTTP2ClientAction {
        switch state {
        case .ready, .draining: break
        case .connecting, .closed: return .none
        }
        var action = HTTP2ClientAction()
        if activity == activityAtLastIdleCheck, !awaitingPingAck {
            awaitingPingAck = true
            action.frame = .ping
            action.timers[.ping] = .arm(at: now &+ nanoseconds(configuration.pingTimeout))
        }
        activityAtLastIdleCheck = activity
        action.timers[.idle] = .arm(at: now &+ nanoseconds(configuration.idlePingInterval))
        return action
    }

    mutating func pingAcknowledged() -> HTTP2ClientAction {
        guard !isClosed, awaitingPingAck else { return .none }
        awaitingPingAck = false
        var action = HTTP2ClientAction()
        action.timers[.ping] = .cancel
        return action
    }

    mutating func pingTimedOut() -> HTTP2ClientAction {
        guard !isClosed, awaitingPingAck else { return .none }
        return close(.timeout("no PING acknowledgement from \(peerName) within \(configuration.pingTimeout)"), .now)
    }

    // MARK: Draining

    /// The server sent GOAWAY: queued requests go elsewhere, in-flight ones may finish.
    mutating func goawayReceived(_ frame: ReceivedGoaway, now: UInt64) -> HTTP2ClientAction {
        guard !isClosed else { return .none }
        goaway = frame
        return startDraining(.goaway, now: now)
    }

    /// The pool replaces this connection: it opens no new stream, its queued requests go back
    /// (never sent here), and its in-flight streams finish with their answers; GOAWAY goes out
    /// only after the last one ended (``DrainReason/saysGoawayAtTheEnd``). The drain timeout
    /// bounds the wait; the response timeout still ends each stream on its own.
    mutating func retireRequested(now: UInt64) -> HTTP2ClientAction {
        startDraining(.retired, now: now)
    }

    /// Stop taking requests, fail the queued ones, and close once in-flight streams end (then
    /// with GOAWAY) or after `gracePeriod` (default: the drain timeout).
    mutating func shutdownRequested(gracePeriod: Duration?, now: UInt64) -> HTTP2ClientAction {
        switch state {
        case .closed, .draining(.shutdown): return .none
        case .connecting, .ready, .draining: break
        }
        // From connecting or ready this reports the drain; from another drain it only takes over.
        var action = startDraining(.shutdown, now: now)
        state = .draining(.shutdown)
        action.requests = .failQueued(.shutdown)
        action.timers[.drain] = .arm(at: now &+ nanoseconds(gracePeriod ?? configuration.drainTimeout))
        return action
    }

    mutating func drainTimedOut() -> HTTP2ClientAction {
        guard case .draining(let reason) = state else { return .none }
        guard reason == .shutdown else {
            return close(.timeout("streams on \(peerName) still open \(configuration.drainTimeout) after the connection began draining"), .now)
        }
        var action = close(nil, .afterWrittenOutput)
        action.requests = .failInFlight(.shutdown)
        return action
    }

    /// After the inputs of one read, flush or shutdown: a drain with nothing left in flight ends
    /// cleanly (with the client's GOAWAY, when the client chose to leave); a session nghttp2
    /// ended (after a connection-level error it neither reads nor writes) closes with
    /// `sessionEndedWith` as the reason instead of waiting for a timeout.
    mutating func settled(sessionEndedWith reason: String?) -> HTTP2ClientAction {
        if case .draining(let drain) = state, inFlight == 0 {
            var action = close(nil, .afterPendingFrames)
            if drain.saysGoawayAtTheEnd { action.frame = .goaway }
            return action
        }
        guard let reason else { return .none }
        return close(.socket("HTTP/2 protocol error with \(peerName): \(reason)"), .now)
    }

    // MARK: Closing

    /// Output moved below the transport's low-water mark: write more.
    mutating func writeDrained() -> HTTP2ClientAction {
        var action = HTTP2ClientAction()
        action.flush = isWritable
        return action
    }

    /// nghttp2 failed (bad input, or it could not encode): the connection is unusable.
    mutating func sessionFailed(_ error: TransportError) -> HTTP2ClientAction { close(error, .now) }

    mutating func transportClosed(_ error: TransportError) -> HTTP2ClientAction { close(error, .now) }

    mutating func closeRequested() -> HTTP2ClientAction { close(.closedLocally, .now) }

    // MARK: Transitions

    private mutating func startDraining(_ reason: DrainReason, now: UInt64) -> HTTP2ClientAction {
        switch state {
        case .connecting, .ready: break
        case .draining, .closed: return .none
        }
        state = .draining(reason)
        var action = HTTP2ClientAction()
        if queued > 0 {
            action.requests = .handBackQueued(retryReason(for: reason))
            queued = 0
        }
        action.timers[.connect] = .cancel
        action.timers[.drain] = .arm(at: now &+ nanoseconds(configuration.drainTimeout))
        action.report = .draining
        return action
    }

    /// The one way to the closed state. The shell hands back or fails what it holds (see
    /// ``outcomeAtClose(streamID:headersSent:)``) and cancels every timer.
    private mutating func close(_ error: TransportError?, _ ending: HTTP2ClientAction.Ending) -> HTTP2ClientAction {
        guard !isClosed else { return .none }
        state = .closed(error)
        queued = 0
        inFlight = 0
        awaitingPingAck = false
        responseTimerArmed = false
        var action = HTTP2ClientAction()
        action.close = .init(error: error, ending: ending)
        return action
    }

    private func retryReason(for reason: DrainReason) -> HTTP2RetryReason {
        switch reason {
        case .goaway:
            .goaway(errorCode: goaway?.errorCode ?? HTTP2ErrorCode.noError, reason: goaway?.reason)
        case .streamIDsExhausted:
            .streamIDsExhausted
        case .shutdown:
            .connectionLost(.closedLocally, wasSent: false)
        case .retired:
            .retired
        }
    }

    private func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(clamping: max(0, duration.inNanoseconds))
    }
}
