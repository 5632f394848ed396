import TouchlineCore
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server (keep-alive, pipelining, streamed responses) on libevent events, confined
/// to one loop.
///
/// Loop-confined: create, use and shut it down on its loop's thread (`@unchecked Sendable` only
/// so closures running on that loop can capture it). Every request becomes an ``HTTPRequest``
/// handed to `handler`, which answers it now or later on the same loop.
///
/// The server answers by itself, always in JSON (`{"error": code, "message": text}`): framing it
/// cannot read one way only (400, see ``HTTP1RequestParser``), a head too large (431), a body too
/// large (413, from its `Content-Length` before it is read), a method it does not serve (501), a
/// deadline missed (408), a refusal of the admission hook, the body budget full (503
/// `server_busy`) or a key's share of it (429 `key_body_budget_full`), too many connections (503
/// `too_many_connections`) or too many from one address (429 `too_many_connections_from_address`)
/// and shutdown (503 `shutting_down`). See ``HTTPServerConfiguration`` for each limit; which
/// connections it takes is ``HTTPConnectionSlots``', how much body it holds ``HTTPBodyBudget``'s.
public final class HTTPServer: @unchecked Sendable {
    public let loop: EventLoop
    /// The bound port (useful after binding port 0).
    public let port: Int
    /// Requests handed to the handler and not yet answered or abandoned.
    public private(set) var inFlightRequests = 0
    /// True once ``shutdown(gracePeriod:completion:)`` has begun.
    public private(set) var isShuttingDown = false
    /// Request body bytes held now, all connections together (see
    /// ``HTTPConnectionLimits/maxBufferedBodyBytes``).
    public var bufferedBodyBytes: Int { bodies.held }
    /// Connections open, general and probe, not counting those only writing a refusal.
    public var openConnections: Int { slots.general + slots.probes }
    /// What the server holds now and has refused so far. Loop thread only.
    public var figures: HTTPServerFigures {
        var figures = counts
        figures.generalConnections = slots.general
        figures.probeConnections = slots.probes
        figures.bufferedBodyBytes = bodies.held
        figures.bufferedBodyBytesByOwner = bodies.heldByOwner
        return figures
    }

    let configuration: HTTPServerConfiguration
    /// Where each connection reads into before parsing (one loop, one read at a time).
    let scratch: UnsafeMutableRawBufferPointer
    private let handler: (HTTPRequest) -> Void
    private let log: GatewayLog
    private var listener: TCPListener?
    private var connections: [UInt64: HTTP1Connection] = [:]
    private var lastConnectionID: UInt64 = 0
    private var slots: HTTPConnectionSlots
    private var bodies: HTTPBodyBudget
    /// The counters of ``figures``.
    private var counts = HTTPServerFigures()
    /// Connections refused at accept that are writing their refusal.
    private var refusals = 0
    private var acceptBackoff = AcceptBackoff()
    private var acceptTimer: LoopTimer?
    private var acceptLog = LogRateLimiter(maxLines: 1, per: .seconds(1))
    private var refusalLog = LogRateLimiter(maxLines: 1, per: .seconds(10))
    private var addressRefusalLog = LogRateLimiter(maxLines: 1, per: .seconds(10))
    /// Streamed responses still open, ended when the server shuts down.
    private var openStreams: [ObjectIdentifier: HTTPResponseStream] = [:]
    private var shutdownTimer: LoopTimer?
    private var shutdownCompletion: (() -> Void)?
    private var finishScheduled = false
    private var isFinished = false
    private var dateCache: (second: Int, text: [UInt8]) = (-1, [])

    /// Refusals beyond the cap that may linger at once; past it they are closed straight after
    /// the refusal is written.
    private static let maxLingeringRefusals = 64

    /// Binds and starts serving. Loop thread only. `log` receives the server's own warnings
    /// (accept paused at the descriptor limit, connections refused at the cap), rate-limited.
    public init(loop: EventLoop, configuration: HTTPServerConfiguration, log: GatewayLog = GatewayLog(component: "http"),
                handler: @escaping (HTTPRequest) -> Void) throws {
        self.loop = loop
        self.configuration = configuration
        self.handler = handler
        self.log = log
        let limits = configuration.connectionLimits
        slots = HTTPConnectionSlots(maxConnections: limits.maxConnections, maxPerAddress: limits.maxConnectionsPerAddress,
                                    probeSlots: configuration.probePaths.isEmpty ? 0 : limits.probeConnections)
        bodies = HTTPBodyBudget(limit: limits.maxBufferedBodyBytes, ownerLimit: limits.maxBufferedBodyBytesPerKey)
        guard (0...65535).contains(configuration.port) else {
            throw TransportError.socket("listen port must be between 0 and 65535, got \(configuration.port)")
        }
        scratch = .allocate(byteCount: 64 << 10, alignment: 16)
        let listener: TCPListener
        do {
            listener = try TCPListener(loop: loop, host: configuration.host, port: configuration.port) { _ in }
        } catch {
            scratch.deallocate()
            throw error
        }
        port = listener.port
        self.listener = listener
        listener.onAccept = { [unowned self] in accepted($0) }
        listener.onAcceptError = { [unowned self] in acceptFailed($0) }
    }

    deinit {
        for connection in connections.values { connection.close(notifyingServer: false) }
        listener?.close()
        scratch.deallocate()
    }

    // MARK: Connections

    private func accepted(_ fd: Int32) {
        let socket = StreamSocket(fd: fd)
        socket.disableNagle()
        lastConnectionID += 1
        let id = lastConnectionID
        let address = PeerAddress(peerOf: fd)
        let role: HTTP1Connection.Role
        // A probe connection whose request is in its socket, not read yet, keeps its slot: on a
        // busy turn of the loop many accepts can come before its read.
        switch slots.admit(id: id, from: address, mayEvict: { [connections] in connections[$0]?.hasUnreadRequest != true }) {
        case .general:
            role = .general
        case .probe(let evicting):
            if let evicting, let waiting = connections[evicting] {
                counts.probeSlotsReclaimed += 1
                waiting.close()
            }
            role = .probe
        case .refused(.serverFull):
            if let suppressed = refusalLog.admit(at: .now) {
                log.warning("refusing connections: \(slots.general) are open, the limit (http.maxConnections), "
                            + "and \(slots.probes) for probes only (http.probeConnections)"
                            + (suppressed > 0 ? "; \(suppressed) more refused since the last line" : ""))
            }
            return refuseConnection(socket, id: id, refusalForFullServer())
        case .refused(.addressFull):
            if let suppressed = addressRefusalLog.admit(at: .now), let address {
                log.warning("refusing connections from \(address.client)\(address.isIPv4 ? "" : "/64"): "
                            + "\(slots.connections(of: address)) are open from it, the limit (http.maxConnectionsPerAddress)"
                            + (suppressed > 0 ? "; \(suppressed) more refused from any address since the last line" : ""))
            }
            return refuseConnection(socket, id: id, refusalForFullAddress())
        }
        let connection = HTTP1Connection(server: self, id: id, socket: socket, role: role)
        connections[id] = connection
        connection.start()
    }

    /// The answer to a connection over the cap, and to anything but a probe on a probe
    /// connection; counted as a connection refused either way.
    func refusalForFullServer() -> HTTPResponse {
        counts.connectionsRefused["too_many_connections", default: 0] += 1
        var refusal = HTTPResponse.error(status: 503, error: "too_many_connections",
                                         message: "the server has \(configuration.connectionLimits.maxConnections) connections open, its limit; "
                                             + "retry shortly")
        refusal.headers.append(("Retry-After", "1"))
        return refusal
    }

    /// The answer to a connection from a client at its share; counted as a connection refused.
    private func refusalForFullAddress() -> HTTPResponse {
        counts.connectionsRefused["too_many_connections_from_address", default: 0] += 1
        var refusal = HTTPResponse.error(status: 429, error: "too_many_connections_from_address",
                                         message: "this client address has \(configuration.connectionLimits.maxConnectionsPerAddress) "
                                             + "connections open, the limit for one address; close one or retry shortly")
        refusal.headers.append(("Retry-After", "1"))
        return refusal
    }

    /// Refused at accept: a canned answer, written by a connection that lingers (bounded), or at once.
    private func refuseConnection(_ socket: StreamSocket, id: UInt64, _ refusal: HTTPResponse) {
        guard refusals < Self.maxLingeringRefusals else {
            let bytes = HTTP1ResponseEncoder.head(status: refusal.status, headers: refusal.headers, framing: .length(refusal.body.count),
                                                  persistence: .close, date: date()) + refusal.body
            _ = bytes.withUnsafeBytes { socket.send($0) }
            return socket.close()
        }
        let connection = HTTP1Connection(server: self, id: id, socket: socket, role: .refusal)
        refusals += 1
        connections[connection.id] = connection
        connection.start(refusal: refusal)
    }

    /// Out of descriptors (or memory): stop watching the listener for a growing pause instead of
    /// failing again on every turn of the loop.
    private func acceptFailed(_ code: Int32) {
        let pause = acceptBackoff.pause(afterFailureAt: .now)
        listener?.pause()
        if let suppressed = acceptLog.admit(at: .now) {
            log.warning("accept() failed: \(String(cString: strerror(code))); not accepting for \(secondsText(pause)) "
                        + "(\(openConnections) connections open)" + (suppressed > 0 ? "; \(suppressed) more pauses since the last line" : ""))
        }
        let timer = acceptTimer ?? LoopTimer(loop: loop) { [unowned self] in listener?.resume() }
        acceptTimer = timer
        timer.schedule(after: pause)
    }

    func connectionClosed(_ connection: HTTP1Connection) {
        connections[connection.id] = nil
        if connection.role == .refusal { refusals -= 1 } else { slots.release(id: connection.id) }
        // Released on a later turn: the connection may be deep in its own callback now.
        loop.execute { withExtendedLifetime(connection) {} }
        finishShutdownIfDrained()
    }

    func connectionDrained() {
        if isShuttingDown { finishShutdownIfDrained() }
    }

    // MARK: Requests

    func dispatch(_ request: HTTPRequest) {
        inFlightRequests += 1
        if isShuttingDown {
            request.respond(.error(status: 503, error: "shutting_down", message: "the server is shutting down"))
        } else {
            handler(request)
        }
    }

    func requestFinished() {
        inFlightRequests -= 1
        finishShutdownIfDrained()
    }

    /// The connection read its first complete head.
    func headReceived(on connection: HTTP1Connection) {
        slots.headReceived(id: connection.id)
    }

    /// The probe connection has its answer and is closing.
    func probeAnswered(on connection: HTTP1Connection) {
        slots.answered(id: connection.id)
    }

    func firstRequestTimedOut() {
        counts.firstRequestTimeouts += 1
    }

    /// Takes `bytes` from the body budget for `owner`; nil when taken, else the answer to give
    /// (nothing taken).
    func reserveBody(_ bytes: Int, owner: Int?) -> HTTPResponse? {
        guard let refusal = bodies.reserve(bytes, owner: owner) else { return nil }
        let limits = configuration.connectionLimits
        let (status, code, message) = switch refusal {
        case .full:
            (503, "server_busy", "the server is holding \(bodies.held) bytes of request bodies, close to its limit "
                + "of \(limits.maxBufferedBodyBytes); retry shortly")
        case .ownerFull:
            (429, "key_body_budget_full", "this API key's requests hold \(owner.map { bodies.heldByOwner[$0, default: 0] } ?? 0) bytes of "
                + "request bodies; \(bytes) more would pass its share of \(limits.maxBufferedBodyBytesPerKey); retry shortly")
        }
        counts.bodyRefusals[.init(code: code, owner: owner), default: 0] += 1
        var response = HTTPResponse.error(status: status, error: code, message: message)
        response.headers.append(("Retry-After", "1"))
        return response
    }

    func releaseBody(_ bytes: Int, owner: Int?) {
        bodies.release(bytes, owner: owner)
    }

    /// The `Date` header's value, formatted once per second.
    func date() -> [UInt8] {
        let now = time(nil)
        if now != dateCache.second { dateCache = (now, HTTPDate.imfFixdate(epochSeconds: now)) }
        return dateCache.text
    }

    func streamStarted(_ stream: HTTPResponseStream) {
        openStreams[ObjectIdentifier(stream)] = stream
    }

    func streamEnded(_ stream: HTTPResponseStream) {
        openStreams[ObjectIdentifier(stream)] = nil
    }

    // MARK: Shutdown

    /// Stops accepting connections, ends streamed responses, lets requests in flight be answered
    /// for up to `gracePeriod` (answers then carry `Connection: close`; new requests on open
    /// connections get 503), then closes every connection. `completion` runs on the loop once
    /// all are closed (also for a second call made meanwhile). Loop thread only.
    public func shutdown(gracePeriod: Duration, completion: @escaping () -> Void = {}) {
        guard !isFinished else { return completion() }
        if isShuttingDown {
            let earlier = shutdownCompletion
            shutdownCompletion = { earlier?(); completion() }
            return
        }
        isShuttingDown = true
        shutdownCompletion = completion
        listener?.close()
        listener = nil
        acceptTimer?.cancel()
        // A stream would hold the shutdown for the whole grace period: end each one now.
        for stream in openStreams.values { stream.close() }
        finishShutdownIfDrained()
        let timer = LoopTimer(loop: loop) { [unowned self] in finishShutdown() }
        timer.schedule(after: gracePeriod)
        shutdownTimer = timer
    }

    /// Ends the grace of a shutdown under way at once (an escalated stop): requests still
    /// pending are abandoned with their connections (none was acknowledged), and the shutdown's
    /// completion runs. Does nothing before ``shutdown(gracePeriod:completion:)``. Loop thread only.
    public func cutShutdownShort() {
        guard isShuttingDown, !isFinished else { return }
        finishShutdown()
    }

    /// Drained: nothing in flight and no connection still writing its last answer. Finished on
    /// a later turn of the loop, never inside a connection's own callback.
    private func finishShutdownIfDrained() {
        guard isShuttingDown && !finishScheduled && inFlightRequests == 0
              && !connections.values.contains(where: { $0.phase == .closing }) else { return }
        finishScheduled = true
        loop.execute { self.finishShutdown() }
    }

    private func finishShutdown() {
        guard !isFinished else { return }
        isFinished = true
        shutdownTimer?.cancel()
        shutdownTimer = nil
        // Requests still pending are abandoned with their connections.
        for connection in Array(connections.values) { connection.close() }
        let completion = shutdownCompletion
        shutdownCompletion = nil
        completion?()
    }
}
