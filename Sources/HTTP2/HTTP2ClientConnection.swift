import CNGHTTP2
import Dispatch
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
    public private(set) var state: State = .connecting
    /// Why the connection closed; nil while open or after a clean drain.
    public private(set) var closeError: TransportError?

    var session: OpaquePointer?
    private var stream: TLSStream?
    private let headerLists = HeaderListBuilder()
    private let output = OutputBatch()
    @exclusivity(unchecked) private var queue = FIFOQueue<HTTP2PendingRequest>()
    @exclusivity(unchecked) private var inFlight = InFlightList()
    /// Streams nghttp2 closed during the current session call; resolved once it has returned, so
    /// that completions and the delegate never run inside nghttp2.
    @exclusivity(unchecked) var closedStreams: [HTTP2PendingRequest] = []
    private var resolvingClosedStreams = false
    @exclusivity(unchecked) private var completedCount = 0
    @exclusivity(unchecked) private var peakBufferedOutput = 0
    @exclusivity(unchecked) private var peakInFlight = 0

    private var transportConnected = false
    private var everReady = false
    var settingsReceived = false
    /// The last GOAWAY received, and whether it still has to be acted on.
    var goaway: ReceivedGoaway?
    var goawayUnhandled = false
    /// nghttp2's description of the last connection-level error, for the close reason.
    var sessionError: String?
    private var drainReason: HTTP2RetryReason?
    private var shuttingDown = false

    /// Bumped on every read and submit; the idle timer compares it between ticks.
    @exclusivity(unchecked) private var activity = 0
    private var activityAtLastIdleCheck = 0
    var awaitingPingAck = false

    private var flushScheduled = false
    /// True while the results of a read are acted on: a flush follows, so none needs scheduling.
    private var reading = false
    private var flushTimer: LoopTimer!
    private var connectTimer: LoopTimer!
    private var idleTimer: LoopTimer!
    var pingTimer: LoopTimer!
    private var drainTimer: LoopTimer!
    private var responseTimer: LoopTimer!

    /// Starts connecting at once (fresh DNS lookup, TCP, TLS with ALPN h2, HTTP/2 preface).
    /// Call on `loop`'s thread.
    public init(loop: EventLoop, context: TLSContext, configuration: HTTP2ConnectionConfiguration,
                delegate: HTTP2ClientConnectionDelegate? = nil) {
        self.loop = loop
        self.configuration = configuration
        self.delegate = delegate
        flushTimer = LoopTimer(loop: loop) { [unowned self] in flush() }
        connectTimer = LoopTimer(loop: loop) { [unowned self] in connectTimedOut() }
        idleTimer = LoopTimer(loop: loop) { [unowned self] in idleCheck() }
        pingTimer = LoopTimer(loop: loop) { [unowned self] in
            fail(.timeout("no PING acknowledgement from \(peerName) within \(configuration.pingTimeout)"))
        }
        drainTimer = LoopTimer(loop: loop) { [unowned self] in drainTimedOut() }
        responseTimer = LoopTimer(loop: loop) { [unowned self] in resetOverdueStreams() }
        session = makeClientSession()
        connectTimer.schedule(after: configuration.connectTimeout)
        stream = TLSStream.connect(loop: loop, context: context, host: configuration.host, port: configuration.port,
                                   connectTimeout: configuration.connectTimeout, delegate: self)
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
        Stats(state: state, inFlight: inFlight.count, peakInFlight: peakInFlight, queued: queue.count,
              remoteMaxConcurrentStreams: settingsReceived ? remoteMaxConcurrentStreams : 0, completed: completedCount,
              peakBufferedOutput: peakBufferedOutput)
    }

    /// In-flight plus queued requests: what a pool balances on.
    public var load: Int { inFlight.count + queue.count }

    private var remoteMaxConcurrentStreams: UInt32 {
        guard let session else { return 0 }
        return nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    // MARK: Sending

    public func send(_ request: HTTP2Request, completion: @escaping (Result<HTTP2Response, HTTP2RequestError>) -> Void) {
        send(HTTP2PendingRequest(request, completion: completion))
    }

    /// Sends a request that may have been handed back by another connection.
    public func send(_ request: HTTP2PendingRequest) {
        switch state {
        case .closed:
            handBack(request, .connectionLost(closeError ?? .closedLocally, wasSent: false))
        case .draining:
            if shuttingDown {
                request.complete(.failure(.shutdown))
            } else {
                handBack(request, drainReason ?? .connectionLost(.closedLocally, wasSent: false))
            }
        case .connecting, .ready:
            guard queue.count < configuration.maxQueuedRequests else {
                request.complete(.failure(.queueFull))
                return
            }
            queue.append(request)
            submitQueued()
        }
    }

    /// Submits queued requests while the server's current stream limit allows.
    private func submitQueued() {
        guard state == .ready, session != nil, !queue.isEmpty else { return }
        var submitted = false
        while !queue.isEmpty, state == .ready, UInt32(clamping: inFlight.count) < remoteMaxConcurrentStreams {
            submit(queue.popFirst()!)
            submitted = true
        }
        if submitted {
            peakInFlight = max(peakInFlight, inFlight.count)
            scheduleFlush()
        }
    }

    private func submit(_ request: HTTP2PendingRequest) {
        guard let session else { return }
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
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue {
                handBack(request, .streamIDsExhausted)
                startDraining(.streamIDsExhausted)
            } else {
                request.complete(.failure(.streamReset(errorCode: NGHTTP2_INTERNAL_ERROR.rawValue)))
            }
            return
        }
        request.streamID = streamID
        request.submittedAt = DispatchTime.now().uptimeNanoseconds
        if inFlight.isEmpty, !responseTimer.isScheduled { responseTimer.schedule(after: configuration.responseTimeout) }
        inFlight.append(request)
        activity &+= 1
    }

    /// Resets every stream older than the response timeout (oldest first, so the walk stops at the
    /// first young one) and re-arms for the oldest remaining stream's deadline.
    private func resetOverdueStreams() {
        guard let session, state != .closed else { return }
        let timeout = UInt64(configuration.responseTimeout.inNanoseconds)
        let now = DispatchTime.now().uptimeNanoseconds
        var nextDeadline: UInt64?
        var reset = false
        inFlight.visitOldest { request in
            guard now >= request.submittedAt &+ timeout else {
                nextDeadline = request.submittedAt &+ timeout
                return false
            }
            if !request.timedOut {
                request.timedOut = true
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), request.streamID, NGHTTP2_CANCEL.rawValue)
                reset = true
            }
            return true
        }
        if let nextDeadline { responseTimer.schedule(after: .nanoseconds(Int64(nextDeadline - now))) }
        if reset { scheduleFlush() }
    }

    func removeFromInFlight(_ request: HTTP2PendingRequest) {
        inFlight.remove(request)
    }

    // MARK: Output

    /// Encodes pending frames on the next loop turn, so that one turn's submits share one write.
    func scheduleFlush() {
        guard !flushScheduled, !reading, transportConnected, state != .closed else { return }
        flushScheduled = true
        flushTimer.schedule(after: .zero)
    }

    /// Moves encoded frames to the TLS stream until nghttp2 has nothing more or the output buffer
    /// reaches the high-water mark (then ``streamDidDrain(_:)`` resumes).
    private func flush() {
        if flushScheduled {
            flushScheduled = false
            flushTimer.cancel()
        }
        guard transportConnected, state != .closed else { return }
        guard writeFrames(limit: configuration.writeHighWaterMark) else { return }
        afterSessionCall()
    }

    /// Returns false when the session failed (the connection is then closed).
    private func writeFrames(limit: Int) -> Bool {
        guard let session, let stream else { return false }
        while stream.pendingOutputBytes + output.count < limit {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            if length < 0 {
                output.flush(to: stream)
                fail(.socket("HTTP/2 session with \(peerName) failed: \(String(cString: nghttp2_strerror(Int32(length))))"))
                return false
            }
            guard length > 0, let data else { break }
            output.append(UnsafeRawBufferPointer(start: data, count: length), to: stream)
        }
        output.flush(to: stream)
        peakBufferedOutput = max(peakBufferedOutput, stream.pendingOutputBytes)
        return true
    }

    // MARK: After each nghttp2 call

    /// Acts on what the last `mem_recv`/`mem_send` recorded: readiness, GOAWAY, closed streams,
    /// freed stream slots, and the end of a drain.
    func afterSessionCall() {
        if settingsReceived, state == .connecting { becomeReady() }
        if goawayUnhandled, let goaway {
            goawayUnhandled = false
            startDraining(.goaway(errorCode: goaway.errorCode, reason: goaway.reason))
        }
        resolveClosedStreams()
        submitQueued()
        finishDrainIfDone()
        closeIfSessionEnded()
    }

    /// nghttp2 ends a session on a connection-level error (it queues GOAWAY and then wants neither
    /// to read nor to write): close with its reason instead of waiting for a timeout.
    private func closeIfSessionEnded() {
        guard state != .closed, let session, nghttp2_session_want_read(session) == 0,
              nghttp2_session_want_write(session) == 0 else { return }
        fail(.socket("HTTP/2 protocol error with \(peerName): \(sessionError ?? "the session ended")"))
    }

    private func becomeReady() {
        state = .ready
        everReady = true
        connectTimer.cancel()
        activityAtLastIdleCheck = activity
        idleTimer.schedule(after: configuration.idlePingInterval)
        delegate?.connectionDidBecomeReady(self)
    }

    private func resolveClosedStreams() {
        guard !resolvingClosedStreams else { return }
        resolvingClosedStreams = true
        var index = 0
        while index < closedStreams.count {
            let request = closedStreams[index]
            index += 1
            resolve(request)
        }
        closedStreams.removeAll(keepingCapacity: true)
        resolvingClosedStreams = false
    }

    private func resolve(_ request: HTTP2PendingRequest) {
        let code = request.closeErrorCode
        if request.timedOut {
            request.complete(.failure(.timedOut(after: configuration.responseTimeout)))
        } else if code == NGHTTP2_NO_ERROR.rawValue, request.status > 0 {
            completedCount += 1
            request.complete(.success(request.takeResponse()))
        } else if code == NGHTTP2_REFUSED_STREAM.rawValue {
            if let goaway, request.streamID > goaway.lastStreamID {
                handBack(request, .goaway(errorCode: goaway.errorCode, reason: goaway.reason))
            } else {
                handBack(request, .refusedStream)
            }
        } else if let goaway, request.streamID <= goaway.lastStreamID {
            request.complete(.failure(.goaway(errorCode: goaway.errorCode, reason: goaway.reason)))
        } else {
            request.complete(.failure(.streamReset(errorCode: code)))
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
        case .streamIDsExhausted:
            request.complete(.failure(.transport(.closedLocally)))
        }
    }

    // MARK: Draining and closing

    private func startDraining(_ reason: HTTP2RetryReason) {
        guard state == .connecting || state == .ready else { return }
        state = .draining
        drainReason = reason
        connectTimer.cancel()
        for request in queue.removeAll() { handBack(request, reason) }
        drainTimer.schedule(after: configuration.drainTimeout)
        delegate?.connectionDidStartDraining(self)
    }

    /// Stops taking requests, fails the queued ones with `.shutdown`, tells the server with GOAWAY
    /// and closes once in-flight streams have finished or `gracePeriod` (default: the configured
    /// drain timeout) has passed; streams still open then fail with `.shutdown`.
    public func shutdown(gracePeriod: Duration? = nil) {
        guard state != .closed, !shuttingDown else { return }
        shuttingDown = true
        for request in queue.removeAll() { request.complete(.failure(.shutdown)) }
        if let session {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                                  NGHTTP2_NO_ERROR.rawValue, nil, 0)
        }
        if state != .draining {
            startDraining(.connectionLost(.closedLocally, wasSent: false))
        }
        drainTimer.schedule(after: gracePeriod ?? configuration.drainTimeout)
        scheduleFlush()
        finishDrainIfDone()
    }

    /// Closes at once; queued and in-flight requests are handed back (or fail, when standalone)
    /// with `.closedLocally`.
    public func close() {
        fail(.closedLocally)
    }

    private func finishDrainIfDone() {
        guard state == .draining, inFlight.isEmpty, closedStreams.isEmpty else { return }
        if transportConnected { _ = writeFrames(limit: .max) }
        teardown(nil, closeTransport: { $0.closeAfterFlush() })
    }

    private func drainTimedOut() {
        guard state == .draining else { return }
        if shuttingDown {
            while let request = inFlight.popFirst() { request.complete(.failure(.shutdown)) }
            teardown(nil, closeTransport: { $0.closeAfterFlush() })
        } else {
            fail(.timeout("streams on \(peerName) still open \(configuration.drainTimeout) after the connection began draining"))
        }
    }

    private func connectTimedOut() {
        guard state == .connecting else { return }
        fail(.timeout(transportConnected
            ? "no HTTP/2 SETTINGS from \(peerName) within \(configuration.connectTimeout)"
            : "connecting to \(peerName) (DNS lookup, TCP, TLS handshake) took longer than \(configuration.connectTimeout)"))
    }

    /// Closes the connection now because of `error`.
    func fail(_ error: TransportError) {
        teardown(error, closeTransport: { $0.close() })
    }

    /// The one way to the closed state: hands back or fails every request, frees the session,
    /// closes the transport and tells the delegate.
    private func teardown(_ error: TransportError?, closeTransport: (TLSStream) -> Void) {
        guard state != .closed else { return }
        state = .closed
        closeError = error
        for timer in [flushTimer, connectTimer, idleTimer, pingTimer, drainTimer, responseTimer] { timer?.cancel() }
        let lost = error ?? .closedLocally
        while let request = inFlight.popFirst() {
            if let goaway, request.streamID <= goaway.lastStreamID {
                request.complete(.failure(.goaway(errorCode: goaway.errorCode, reason: goaway.reason)))
            } else if let goaway, request.headersSent {
                // Above the GOAWAY's last-stream-id: the server promised not to process it.
                handBack(request, .goaway(errorCode: goaway.errorCode, reason: goaway.reason))
            } else {
                handBack(request, .connectionLost(lost, wasSent: request.headersSent))
            }
        }
        for request in queue.removeAll() { handBack(request, .connectionLost(lost, wasSent: false)) }
        if let session {
            nghttp2_session_del(session)
            self.session = nil
        }
        if let stream { closeTransport(stream) }
        delegate?.connection(self, didCloseWith: error, wasReady: everReady)
    }

    // MARK: Idle PING

    private func idleCheck() {
        guard state == .ready || state == .draining, let session else { return }
        if activity == activityAtLastIdleCheck, !awaitingPingAck {
            nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            awaitingPingAck = true
            pingTimer.schedule(after: configuration.pingTimeout)
            scheduleFlush()
        }
        activityAtLastIdleCheck = activity
        idleTimer.schedule(after: configuration.idlePingInterval)
    }
}

// MARK: - Transport events

extension HTTP2ClientConnection: TLSStreamDelegate {
    public func streamDidConnect(_ stream: TLSStream) {
        guard state != .closed else { return }
        transportConnected = true
        flush()
    }

    public func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) {
        guard let session, state != .closed, let base = bytes.baseAddress else { return }
        activity &+= 1
        let result = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 {
            _ = writeFrames(limit: .max)
            fail(.socket("HTTP/2 protocol error from \(peerName): \(String(cString: nghttp2_strerror(Int32(result))))"))
            return
        }
        reading = true
        afterSessionCall()
        reading = false
        // Answer within this loop turn: acknowledgements, window updates and whatever the
        // completions just sent go out in one batch.
        flush()
    }

    public func streamDidDrain(_ stream: TLSStream) {
        flush()
    }

    public func stream(_ stream: TLSStream, didCloseWith error: TransportError) {
        fail(error)
    }
}
