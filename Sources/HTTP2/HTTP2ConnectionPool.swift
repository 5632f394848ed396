import TouchlineCore
import TouchlineRuntime

/// A fixed number of HTTP/2 connections to one `host:port` sharing one TLS context.
///
/// Each request goes to the ready connection with the least load (in-flight plus queued).
/// Requests a connection hands back (REFUSED_STREAM, above a GOAWAY's last-stream-id, or never
/// sent before the connection died) are sent again on another connection, up to
/// ``HTTP2PoolConfiguration/maxRetriesPerRequest`` times. Requests that may have reached the
/// server before their connection died are failed with `.transport`, not repeated.
///
/// Dead or draining connections are replaced; reconnects of one slot are spaced by the
/// configured ``Backoff`` (reset once a connection is ready). While no connection is ready,
/// requests wait in the pool's bounded queue; each failed connection attempt counts as one
/// attempt for every waiting request, so that they fail with the connection error instead of
/// waiting forever when the server stays unreachable (`.notConnected`: never sent).
///
/// Loop-confined, hence `@unchecked Sendable`: create it, send on it and shut it down on its
/// loop's thread only; completions run on that loop.
public final class HTTP2ConnectionPool: HTTP2RequestSender, @unchecked Sendable {
    /// A snapshot for metrics and tests.
    public struct Stats: Sendable {
        /// One entry per open connection (draining ones included).
        public var connections: [HTTP2ClientConnection.Stats]
        /// Requests waiting in the pool for a ready connection.
        public var waiting: Int
        /// Connections opened so far (the first ones included): shows reconnect storms.
        public var connectionAttempts: Int
        /// One entry per configured connection position, with its reconnect state: for readiness checks.
        public var slots: [SlotStats]
        public var readyConnections: Int { connections.filter { $0.state == .ready }.count }
    }

    /// One connection position of the pool.
    public struct SlotStats: Sendable, Equatable {
        /// The state of the slot's connection; nil while it waits to reconnect (back-off).
        public var connectionState: HTTP2ClientConnection.State?
        /// Connection attempts that failed (or connections lost) since the last ready one.
        public var consecutiveFailures: Int
        /// Why the last connection of this slot closed, if it failed.
        public var lastError: String?
    }

    public let loop: EventLoop
    public let configuration: HTTP2PoolConfiguration
    private let context: TLSContext
    private var slots: [Slot] = []
    /// Draining connections that were replaced in their slot, kept until they close.
    private var retiring: [HTTP2ClientConnection] = []
    /// Closed connections, released on the next loop turn rather than inside their own callbacks.
    private var closed: [HTTP2ClientConnection] = []
    private var releaseTimer: LoopTimer!
    private var waiting = FIFOQueue<HTTP2PendingRequest>()
    private var isShutDown = false
    private var connectionAttempts = 0
    private var shutdownCompletion: (() -> Void)?
    private let updateHeldRequest: ((inout HTTP2Request) -> Void)?

    /// One connection position: the current connection and its reconnect schedule.
    private final class Slot {
        var connection: HTTP2ClientConnection?
        var consecutiveFailures = 0
        var reconnectTimer: LoopTimer?
        var lastError: TransportError?
    }

    /// Opens `configuration.connectionCount` connections at once. Call on `loop`'s thread.
    ///
    /// `updateHeldRequest` is applied to a request the pool held (it waited for a ready
    /// connection, or a connection handed it back) just before it goes to a connection: what a
    /// request's sender stamped into it may be stale by then. APNs's provider token is such a
    /// stamp: a new token goes on new connections (``renewConnections()``), and a request signed
    /// with the old one and sent first on a new connection would make that connection's token
    /// change within 20 minutes: APNs refuses every request after it with `429
    /// TooManyProviderTokenUpdates`.
    /// A request sent at once is not held, and not updated.
    public init(loop: EventLoop, context: TLSContext, configuration: HTTP2PoolConfiguration,
                updateHeldRequest: ((inout HTTP2Request) -> Void)? = nil) {
        self.loop = loop
        self.context = context
        self.configuration = configuration
        self.updateHeldRequest = updateHeldRequest
        releaseTimer = LoopTimer(loop: loop) { [unowned self] in closed.removeAll() }
        for _ in 0..<configuration.connectionCount {
            let slot = Slot()
            slot.reconnectTimer = LoopTimer(loop: loop) { [unowned self, unowned slot] in connect(slot) }
            slots.append(slot)
            connect(slot)
        }
    }

    /// Releasing a pool fails the requests still waiting in it (its connections do the same
    /// for theirs); call ``shutdown(gracePeriod:completion:)`` first for a graceful end.
    deinit {
        while let request = waiting.popFirst() { request.complete(.failure(.shutdown)) }
    }

    public var stats: Stats {
        Stats(connections: (slots.compactMap(\.connection) + retiring).map(\.stats), waiting: waiting.count,
              connectionAttempts: connectionAttempts,
              slots: slots.map { SlotStats(connectionState: $0.connection?.state, consecutiveFailures: $0.consecutiveFailures,
                                           lastError: $0.lastError.map { "\($0)" }) })
    }

    public func send(_ request: HTTP2Request, completion: @escaping (Result<HTTP2Response, HTTP2RequestError>) -> Void) {
        dispatch(HTTP2PendingRequest(request, completion: completion), held: false)
    }

    /// Stops taking requests: waiting ones fail with `.shutdown`, every connection closes (with
    /// GOAWAY) once its in-flight streams finish, or after `gracePeriod` (default: the configured
    /// drain timeout). `completion` runs on the loop when all connections are closed.
    public func shutdown(gracePeriod: Duration? = nil, completion: (() -> Void)? = nil) {
        guard !isShutDown else {
            completion?()
            return
        }
        isShutDown = true
        shutdownCompletion = completion
        for request in waiting.removeAll() { request.complete(.failure(.shutdown)) }
        for slot in slots {
            slot.reconnectTimer?.cancel()
            slot.connection?.shutdown(gracePeriod: gracePeriod)
        }
        for connection in retiring { connection.shutdown(gracePeriod: gracePeriod) }
        finishShutdownIfDone()
    }

    /// Ends a shutdown's grace at once (an escalated stop): every connection closes now and its
    /// queued and in-flight requests are handed back with `.closedLocally`; the shutdown's
    /// completion then runs as usual. Does nothing before ``shutdown(gracePeriod:completion:)``.
    public func cutShutdownShort() {
        guard isShutDown else { return }
        for slot in slots { slot.connection?.close() }
        for connection in retiring { connection.close() }
        finishShutdownIfDone()
    }

    /// Replaces every connection with a new one at once (the provider token changed, and APNs
    /// refuses a connection's token changed more often than every 20 minutes): each slot connects
    /// anew, its old connection retires (``HTTP2ClientConnection/retire()``): it opens no new
    /// stream, what was queued on it comes back to the pool for the new connections, what was in
    /// flight finishes with its answers, and only then it sends GOAWAY and closes.
    public func renewConnections() {
        guard !isShutDown else { return }
        for slot in slots {
            slot.reconnectTimer?.cancel()
            let old = slot.connection
            connect(slot)
            if let old {
                retiring.append(old)
                old.retire()
            }
        }
    }

    private func connect(_ slot: Slot) {
        guard !isShutDown else { return }
        connectionAttempts += 1
        slot.connection = HTTP2ClientConnection(loop: loop, context: context, configuration: configuration.connection, delegate: self)
    }

    /// Sends `request` on the least loaded ready connection, or keeps it until one is ready.
    /// `held`: the pool held it before (a connection handed it back).
    private func dispatch(_ request: HTTP2PendingRequest, held: Bool) {
        if isShutDown {
            request.complete(.failure(.shutdown))
        } else if let connection = leastLoadedReadyConnection() {
            if held { updateHeldRequest?(&request.request) }
            connection.send(request)
        } else if waiting.count >= configuration.maxQueuedRequests {
            request.complete(.failure(.queueFull))
        } else {
            waiting.append(request)
        }
    }

    private func leastLoadedReadyConnection() -> HTTP2ClientConnection? {
        var best: HTTP2ClientConnection?
        for slot in slots {
            guard let connection = slot.connection, connection.state == .ready else { continue }
            if best == nil || connection.load < best!.load { best = connection }
        }
        return best
    }

    private func slot(of connection: HTTP2ClientConnection) -> Slot? {
        slots.first { $0.connection === connection }
    }

    private func scheduleReconnect(_ slot: Slot) {
        guard !isShutDown else { return }
        let delay = configuration.backoff.delay(attempt: slot.consecutiveFailures)
        slot.consecutiveFailures += 1
        slot.reconnectTimer?.schedule(after: delay)
    }

    /// A connection attempt failed while no connection is ready: every waiting request has used
    /// one attempt; those out of attempts fail with the connection's error.
    private func chargeWaitingRequests(with error: TransportError) {
        guard leastLoadedReadyConnection() == nil else { return }
        for request in waiting.removeAll() {
            request.attempts += 1
            if request.attempts > configuration.maxRetriesPerRequest {
                request.complete(.failure(.notConnected(error)))
            } else {
                waiting.append(request)
            }
        }
    }

    private func finishShutdownIfDone() {
        guard isShutDown, retiring.isEmpty, slots.allSatisfy({ $0.connection == nil }), let completion = shutdownCompletion else { return }
        shutdownCompletion = nil
        completion()
    }
}

extension HTTP2ConnectionPool: HTTP2ClientConnectionDelegate {
    public func connectionDidBecomeReady(_ connection: HTTP2ClientConnection) {
        slot(of: connection)?.consecutiveFailures = 0
        slot(of: connection)?.lastError = nil
        while !waiting.isEmpty, let target = leastLoadedReadyConnection() {
            let request = waiting.popFirst()!
            updateHeldRequest?(&request.request)
            target.send(request)
        }
    }

    public func connectionDidStartDraining(_ connection: HTTP2ClientConnection) {
        guard let slot = slot(of: connection) else { return }
        slot.connection = nil
        retiring.append(connection)
        scheduleReconnect(slot)
    }

    public func connection(_ connection: HTTP2ClientConnection, handsBack request: HTTP2PendingRequest, reason: HTTP2RetryReason) {
        if isShutDown {
            request.complete(.failure(.shutdown))
            return
        }
        if case .connectionLost(let error, wasSent: true) = reason {
            request.complete(.failure(.transport(error)))
            return
        }
        request.attempts += 1
        if request.attempts > configuration.maxRetriesPerRequest {
            request.complete(.failure(.retriesExhausted(last: reason.description)))
        } else {
            dispatch(request, held: true)
        }
    }

    public func connection(_ connection: HTTP2ClientConnection, didCloseWith error: TransportError?, wasReady: Bool) {
        closed.append(connection)
        releaseTimer.schedule(after: .zero)
        if let index = retiring.firstIndex(where: { $0 === connection }) {
            retiring.remove(at: index)
        } else if let slot = slot(of: connection) {
            slot.connection = nil
            if let error { slot.lastError = error }
            if let error, !wasReady { chargeWaitingRequests(with: error) }
            scheduleReconnect(slot)
        }
        finishShutdownIfDone()
    }
}
