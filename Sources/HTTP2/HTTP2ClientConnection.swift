import CNGHTTP2
import TouchlineCore
import TouchlineRuntime

/// One HTTP/2 connection to a server over TLS, on nghttp2's client session.
///
/// Requests wait in a bounded FIFO until the server's SETTINGS arrive and a stream is free under
/// the server's *current* SETTINGS_MAX_CONCURRENT_STREAMS (APNs starts at 1 and raises it later),
/// so the connection never opens more streams than allowed. Output is encoded in batches (one
/// flush per loop turn) and paused above ``HTTP2ConnectionConfiguration/writeHighWaterMark``.
///
/// Requests the server did not process (REFUSED_STREAM, above a GOAWAY's last-stream-id, never
/// sent before the connection died) are handed back to the ``delegate`` (a pool) to be sent again
/// elsewhere; without a delegate they fail (refused ones are retried here a few times first).
///
/// The lifecycle (when it is ready, how many streams it may open, what becomes of each request,
/// when to PING, drain and close) is decided by an ``HTTP2ClientStateMachine``; this class is the
/// shell around it: it feeds it what nghttp2, the transport and the timers report, performs the
/// actions it returns, and owns the I/O (the nghttp2 session, the transport, one ``TimerSet``).
///
/// Loop-confined, hence `@unchecked Sendable`: create it, send on it and read its state on its
/// loop's thread only. Completions run on that loop, exactly once per request.
public final class HTTP2ClientConnection: HTTP2RequestSender, @unchecked Sendable {
    public enum State: Sendable, Equatable {
        /// DNS, TCP, TLS and waiting for the server's SETTINGS; requests queue meanwhile.
        case connecting
        case ready
        /// No new requests (GOAWAY, shutdown, stream ids used up); closes when in-flight streams end.
        case draining
        case closed
    }

    /// A snapshot for load balancing and metrics.
    public struct Stats: Sendable, Equatable {
        public var state: State
        /// Streams submitted and not yet closed.
        public var inFlight: Int
        /// The most streams ever in flight at once on this connection.
        public var peakInFlight: Int
        /// Requests waiting for a free stream.
        public var queued: Int
        /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS (0 until its SETTINGS arrived;
        /// 2^32-1 when it sets no limit).
        public var remoteMaxConcurrentStreams: UInt32
        /// Requests answered with a response on this connection.
        public var completed: Int
        /// The most encoded output ever waiting in the TLS stream's buffer: stays near
        /// ``HTTP2ConnectionConfiguration/writeHighWaterMark`` plus one frame at most.
        public var peakBufferedOutput: Int
    }

    public let loop: EventLoop
    public let configuration: HTTP2ConnectionConfiguration
    /// The owner that retries handed-back requests; nil for a standalone connection.
    public weak var delegate: HTTP2ClientConnectionDelegate?

    /// The state machine's state without its details (a pool picks ready connections by it).
    public var state: State {
        switch machine.state {
        case .connecting: .connecting
        case .ready: .ready
        case .draining: .draining
        case .closed: .closed
        }
    }

    /// Why the connection closed; nil while open or after a clean drain.
    public var closeError: TransportError? { machine.closeError }

    @exclusivity(unchecked) private var machine: HTTP2ClientStateMachine
    private let timers: TimerSet
    var session: OpaquePointer?
    private var transport: (any HTTP2ClientTransport)?
    private let headerLists = HeaderListBuilder()
    private let output = OutputBatch()
    @exclusivity(unchecked) private var queue = FIFOQueue<HTTP2PendingRequest>()
    @exclusivity(unchecked) private var inFlight = InFlightList()
    /// Streams nghttp2 closed during the current session call; resolved once it has returned, so
    /// that completions and the delegate never run inside nghttp2.
    @exclusivity(unchecked) var closedStreams: [HTTP2PendingRequest] = []
    /// Submitted requests with a fence whose HEADERS have not been written yet: checked before
    /// each write (``withholdLapsedRequests(_:)``).
    private var fencedUnsent: [HTTP2PendingRequest] = []
    private var resolvingClosedStreams = false
    @exclusivity(unchecked) private var peakBufferedOutput = 0

    // Recorded by nghttp2's callbacks, fed to the state machine after the session call.
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS after the last SETTINGS frame received.
    var receivedMaxConcurrentStreams: UInt32?
    var receivedGoaway: ReceivedGoaway?
    var receivedPingAck = false
    /// nghttp2's description of the last connection-level error, for the close reason.
    var sessionError: String?

    private var flushScheduled = false
    /// True while the results of a read are acted on: a flush follows, so none needs scheduling.
    private var reading = false
    /// The closing work has been done (the state machine may be closed a moment earlier).
    private var tornDown = false

    /// Starts connecting at once (fresh DNS lookup, TCP, TLS with ALPN h2, HTTP/2 preface).
    /// Call on `loop`'s thread.
    public convenience init(loop: EventLoop, context: TLSContext, configuration: HTTP2ConnectionConfiguration,
                            delegate: HTTP2ClientConnectionDelegate? = nil) {
        self.init(loop: loop, configuration: configuration, delegate: delegate, timers: TimerSet(loop: loop)) { connection in
            TLSStream.connect(loop: loop, context: context, host: configuration.host, port: configuration.port,
                              connectTimeout: configuration.connectTimeout, delegate: connection)
        }
    }

    /// A connection on any transport and timer set (tests: an in-memory pipe and virtual time).
    /// `makeTransport` starts connecting; the transport reports through the `transportDid…` methods.
    init(loop: EventLoop, configuration: HTTP2ConnectionConfiguration, delegate: HTTP2ClientConnectionDelegate?,
         timers: TimerSet, transport makeTransport: (HTTP2ClientConnection) -> any HTTP2ClientTransport) {
        self.loop = loop
        self.configuration = configuration
        self.delegate = delegate
        self.timers = timers
        machine = HTTP2ClientStateMachine(configuration: configuration)
        timers.onFire = { [unowned self] in timerFired($0) }
        session = makeClientSession()
        perform(machine.connectionStarted(now: timers.now))
        transport = makeTransport(self)
    }

    /// Releasing a connection that is still open fails what it holds rather than dropping it
    /// (call ``close()`` or ``shutdown(gracePeriod:)`` first to get the normal hand-back).
    deinit {
        while let request = inFlight.popFirst() { request.complete(.failure(.transport(.closedLocally))) }
        while let request = queue.popFirst() { request.complete(.failure(.transport(.closedLocally))) }
        if let session { nghttp2_session_del(session) }
    }

    var peerName: String { "\(configuration.host):\(configuration.port)" }

    public var stats: Stats {
        Stats(state: state, inFlight: inFlight.count, peakInFlight: machine.peakInFlight, queued: queue.count,
              remoteMaxConcurrentStreams: session == nil ? 0 : machine.remoteMaxConcurrentStreams, completed: machine.completed,
              peakBufferedOutput: peakBufferedOutput)
    }

    /// In-flight plus queued requests: what a pool balances on.
    public var load: Int { inFlight.count + queue.count }

    // MARK: Sending

    public func send(_ request: HTTP2Request, completion: @escaping (Result<HTTP2Response, HTTP2RequestError>) -> Void) {
        send(HTTP2PendingRequest(request, completion: completion))
    }

    /// Sends a request that may have been handed back by another connection.
    public func send(_ request: HTTP2PendingRequest) {
        switch machine.requestArrived() {
        case .enqueue(let submitNow):
            queue.append(request)
            if submitNow > 0 { submitQueued() }
        case .fail(let error):
            request.complete(.failure(error))
        case .handBack(let reason):
            handBack(request, reason)
        }
    }

    /// Submits queued requests, oldest first, while the state machine grants streams (it re-reads
    /// the server's limit each time: completions and the delegate may have changed things).
    private func submitQueued() {
        var submitted = false
        while machine.streamsToOpen > 0, let request = queue.popFirst() {
            submit(request)
            submitted = true
        }
        if submitted { scheduleFlush() }
    }

    private func submit(_ request: HTTP2PendingRequest) {
        let session = session!  // the machine grants streams only while ready, and the session lives until closed
        request.prepareForSubmit()
        let userData = Unmanaged.passUnretained(request).toOpaque()
        let streamID = headerLists.withHeaderList(for: request.request) { list, count -> Int32 in
            if request.request.body.isEmpty {
                return nghttp2_submit_request(session, nil, list, count, nil, userData)
            }
            var body = nghttp2_data_provider(source: nghttp2_data_source(ptr: userData), read_callback: readRequestBody)
            return nghttp2_submit_request(session, nil, list, count, &body, userData)
        }
        guard streamID > 0 else {
            let exhausted = streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue
            let (outcome, action) = machine.submitFailed(streamIDsExhausted: exhausted, now: timers.now)
            resolve(request, outcome)
            perform(action)
            return
        }
        let now = timers.now
        request.streamID = streamID
        request.submittedAt = now
        inFlight.append(request)
        if request.request.fence != nil { fencedUnsent.append(request) }
        if case .arm(let deadline) = machine.streamOpened(now: now) { timers.arm(.response, at: deadline) }
    }

    /// Resets every stream whose response deadline has passed (oldest first, so the walk stops at
    /// the first young one); the state machine re-arms the timer for the oldest one left.
    private func resetOverdueStreams(now: UInt64) {
        guard let session else { return }
        var oldestRemaining: UInt64?
        var reset = false
        inFlight.visitOldest { request in
            guard now >= machine.responseDeadline(submittedAt: request.submittedAt) else {
                oldestRemaining = request.submittedAt
                return false
            }
            if !request.timedOut {
                request.timedOut = true
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), request.streamID, NGHTTP2_CANCEL.rawValue)
                reset = true
            }
            return true
        }
        perform(machine.overdueStreamsReset(oldestRemainingSubmittedAt: oldestRemaining))
        if reset { scheduleFlush() }
    }

    func removeFromInFlight(_ request: HTTP2PendingRequest) {
        inFlight.remove(request)
    }

    // MARK: Output

    /// Encodes pending frames on the next loop turn, so that one turn's submits share one write.
    func scheduleFlush() {
        guard !flushScheduled, !reading, machine.isWritable else { return }
        flushScheduled = true
        timers.arm(.flush, at: 0)
    }

    /// Moves encoded frames to the transport until nghttp2 has nothing more or the output buffer
    /// reaches the high-water mark (then ``transportDidDrain()`` resumes).
    private func flush() {
        if flushScheduled {
            flushScheduled = false
            timers.cancel(.flush)
        }
        guard machine.isWritable, writeFrames(limit: configuration.writeHighWaterMark) else { return }
        afterSessionCall()
    }

    /// Returns false when the session failed (the connection is then closed).
    private func writeFrames(limit: Int) -> Bool {
        guard let session, let transport else { return false }
        withholdLapsedRequests(session)
        while transport.pendingOutputBytes + output.count < limit {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            if length < 0 {
                output.flush(to: transport)
                perform(machine.sessionFailed(.socket("HTTP/2 session with \(peerName) failed: \(String(cString: nghttp2_strerror(Int32(length))))")))
                return false
            }
            guard length > 0, let data else { break }
            output.append(UnsafeRawBufferPointer(start: data, count: length), to: transport)
        }
        output.flush(to: transport)
        peakBufferedOutput = max(peakBufferedOutput, transport.pendingOutputBytes)
        fencedUnsent.removeAll { $0.headersSent || $0.withheld || !$0.isPending }
        return true
    }

    /// The last moment before submitted requests become bytes: a request whose fence no longer
    /// holds is withheld. A RST_STREAM submitted for a stream whose HEADERS still wait makes
    /// nghttp2 drop them before it encodes them, and close the stream unsent (cancelling in
    /// the before-frame-send callback instead would come after the encoding, and leave the
    /// server's header table out of step with ours: the next request would be a compression
    /// error).
    private func withholdLapsedRequests(_ session: OpaquePointer) {
        for request in fencedUnsent where !request.headersSent && !request.withheld && request.isPending {
            guard let fence = request.request.fence, !fence.holds else { continue }
            request.withheld = true
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), request.streamID, NGHTTP2_CANCEL.rawValue)
        }
    }

    // MARK: After each nghttp2 call

    /// Feeds the state machine what the last `mem_recv`/`mem_send` recorded, in this order:
    /// SETTINGS (readiness, the stream limit), GOAWAY, the PING acknowledgement, closed streams,
    /// then whether a drain is done or nghttp2 ended the session.
    func afterSessionCall() {
        if let limit = receivedMaxConcurrentStreams {
            receivedMaxConcurrentStreams = nil
            perform(machine.settingsReceived(maxConcurrentStreams: limit, now: timers.now))
        }
        if let goaway = receivedGoaway {
            receivedGoaway = nil
            perform(machine.goawayReceived(goaway, now: timers.now))
        }
        if receivedPingAck {
            receivedPingAck = false
            perform(machine.pingAcknowledged())
        }
        resolveClosedStreams()
        perform(machine.settled(sessionEndedWith: sessionHasEnded ? sessionError ?? "the session ended" : nil))
    }

    /// nghttp2 ends a session on a connection-level error: it queues GOAWAY and then wants
    /// neither to read nor to write.
    private var sessionHasEnded: Bool {
        guard !machine.isClosed, let session else { return false }
        return nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    private func resolveClosedStreams() {
        guard !resolvingClosedStreams, !closedStreams.isEmpty else { return }
        resolvingClosedStreams = true
        var index = 0
        while index < closedStreams.count {
            let request = closedStreams[index]
            index += 1
            let (outcome, action) = machine.streamClosed(streamID: request.streamID, errorCode: request.closeErrorCode,
                                                         timedOut: request.timedOut, withheld: request.withheld, hasResponse: request.status > 0)
            resolve(request, outcome)
            perform(action)
        }
        closedStreams.removeAll(keepingCapacity: true)
        resolvingClosedStreams = false
    }

    private func resolve(_ request: HTTP2PendingRequest, _ outcome: HTTP2StreamOutcome) {
        switch outcome {
        case .response: request.complete(.success(request.takeResponse()))
        case .fail(let error): request.complete(.failure(error))
        case .handBack(let reason): handBack(request, reason)
        }
    }

    /// Gives a request the connection cannot complete to its owner, or fails it when standalone.
    private func handBack(_ request: HTTP2PendingRequest, _ reason: HTTP2RetryReason) {
        if let delegate {
            delegate.connection(self, handsBack: request, reason: reason)
            return
        }
        switch reason {
        case .refusedStream:
            request.attempts += 1
            if request.attempts > configuration.maxRefusedRetries {
                request.complete(.failure(.retriesExhausted(last: reason.description)))
            } else {
                send(request)
            }
        case .goaway(let code, let text):
            request.complete(.failure(.goaway(errorCode: code, reason: text)))
        case .connectionLost(let error, _):
            request.complete(.failure(.transport(error)))
        case .streamIDsExhausted, .retired:
            request.complete(.failure(.transport(.closedLocally)))
        }
    }

    // MARK: Draining and closing

    /// Stops taking requests, fails the queued ones with `.shutdown`, and closes once in-flight
    /// streams have finished (telling the server with GOAWAY then) or `gracePeriod` (default: the
    /// configured drain timeout) has passed; streams still open then fail with `.shutdown`.
    public func shutdown(gracePeriod: Duration? = nil) {
        perform(machine.shutdownRequested(gracePeriod: gracePeriod, now: timers.now))
        perform(machine.settled(sessionEndedWith: nil))
    }

    /// Stops taking requests so that a new connection can take over (the provider token changed,
    /// and APNs lets one connection change its token only every 20 minutes): queued requests are
    /// handed back to go elsewhere, in-flight streams finish with their answers, and only then
    /// the server is told with GOAWAY and the connection closes. A GOAWAY sent earlier would let a
    /// server that stops answering after a client's GOAWAY leave processed requests unanswered.
    /// The drain timeout bounds the wait: streams still open then fail as lost after sending
    /// (their owners must not take them for unprocessed).
    public func retire() {
        perform(machine.retireRequested(now: timers.now))
        perform(machine.settled(sessionEndedWith: nil))
    }

    /// Closes at once; queued and in-flight requests are handed back (or fail, when standalone)
    /// with `.closedLocally`.
    public func close() {
        perform(machine.closeRequested())
    }

    /// Does what the state machine decided, in the action's order. A completion or the delegate
    /// may close the connection while the requests are dealt with; the rest of the action is
    /// then stale and dropped.
    private func perform(_ action: HTTP2ClientAction) {
        let wasTornDown = tornDown
        switch action.requests {
        case .none: break
        case .submit: submitQueued()
        case .handBackQueued(let reason): for request in queue.removeAll() { handBack(request, reason) }
        case .failQueued(let error): for request in queue.removeAll() { request.complete(.failure(error)) }
        case .failInFlight(let error): while let request = inFlight.popFirst() { request.complete(.failure(error)) }
        case .resetOverdueStreams(let now): resetOverdueStreams(now: now)
        }
        guard wasTornDown || !tornDown else { return }
        if action.frame != .none, let session {
            if action.frame == .ping {
                nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            } else {
                nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                                      NGHTTP2_NO_ERROR.rawValue, nil, 0)
            }
            scheduleFlush()
        }
        timers.apply(action.timers)
        switch action.report {
        case .none: break
        case .ready: delegate?.connectionDidBecomeReady(self)
        case .draining: delegate?.connectionDidStartDraining(self)
        }
        if let close = action.close { teardown(close) }
        if action.flush { flush() }
    }

    /// The closing work: hands back or fails every request, frees the session, ends the
    /// transport and tells the delegate.
    private func teardown(_ close: HTTP2ClientAction.Close) {
        guard !tornDown else { return }
        tornDown = true
        if close.ending == .afterPendingFrames, machine.isTransportConnected { _ = writeFrames(limit: .max) }
        timers.cancelAll()
        flushScheduled = false
        fencedUnsent = []
        while let request = inFlight.popFirst() {
            resolve(request, machine.outcomeAtClose(streamID: request.streamID, headersSent: request.headersSent))
        }
        for request in queue.removeAll() { handBack(request, .connectionLost(close.error ?? .closedLocally, wasSent: false)) }
        if let session {
            nghttp2_session_del(session)
            self.session = nil
        }
        if let transport {
            if close.ending == .now { transport.close() } else { transport.closeAfterOutput() }
        }
        delegate?.connection(self, didCloseWith: close.error, wasReady: machine.wasReady)
    }

    private func timerFired(_ kind: HTTP2ClientTimer) {
        switch kind {
        case .flush: flush()
        case .connect: perform(machine.connectTimedOut())
        case .idle: perform(machine.idleCheck(now: timers.now))
        case .ping: perform(machine.pingTimedOut())
        case .drain: perform(machine.drainTimedOut())
        case .response: perform(machine.responseDeadlineReached(now: timers.now))
        }
    }

    // MARK: Transport events

    /// TLS is up (ALPN chose h2): the preface and SETTINGS go out.
    func transportDidConnect() {
        perform(machine.transportConnected())
    }

    func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        guard let session, !machine.isClosed, let base = bytes.baseAddress else { return }
        machine.inputReceived()
        let result = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 {
            _ = writeFrames(limit: .max)
            perform(machine.sessionFailed(.socket("HTTP/2 protocol error from \(peerName): \(String(cString: nghttp2_strerror(Int32(result))))")))
            return
        }
        reading = true
        afterSessionCall()
        reading = false
        // Answer within this loop turn: acknowledgements, window updates and whatever the
        // completions just sent go out in one batch.
        flush()
    }

    /// The transport's output went below its low-water mark.
    func transportDidDrain() {
        perform(machine.writeDrained())
    }

    func transportDidClose(_ error: TransportError) {
        perform(machine.transportClosed(error))
    }
}

extension HTTP2ClientConnection: TLSStreamDelegate {
    public func streamDidConnect(_ stream: TLSStream) { transportDidConnect() }

    public func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) { transportDidRead(bytes) }

    public func streamDidDrain(_ stream: TLSStream) { transportDidDrain() }

    public func stream(_ stream: TLSStream, didCloseWith error: TransportError) { transportDidClose(error) }
}
