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
/// `server_busy`), too many connections (503 `too_many_connections`) and shutdown (503
/// `shutting_down`). See ``HTTPServerConfiguration`` for each limit.
public final class HTTPServer: @unchecked Sendable {
    public let loop: EventLoop
    /// The bound port (useful after binding port 0).
    public let port: Int
    /// Requests handed to the handler and not yet answered or abandoned.
    public private(set) var inFlightRequests = 0
    /// True once ``shutdown(gracePeriod:completion:)`` has begun.
    public private(set) var isShuttingDown = false
    /// Request body bytes held now, all connections together (see
    /// ``HTTPServerConfiguration/maxBufferedBodyBytes``).
    public private(set) var bufferedBodyBytes = 0
    /// Connections open, not counting those only writing a refusal.
    public var openConnections: Int { connections.count - refusals }

    let configuration: HTTPServerConfiguration
    /// Where each connection reads into before parsing (one loop, one read at a time).
    let scratch: UnsafeMutableRawBufferPointer
    private let handler: (HTTPRequest) -> Void
    private let log: GatewayLog
    private var listener: TCPListener?
    private var connections: [ObjectIdentifier: HTTP1Connection] = [:]
    /// Connections over the cap that are writing their refusal.
    private var refusals = 0
    private var acceptBackoff = AcceptBackoff()
    private var acceptTimer: LoopTimer?
    private var acceptLog = LogRateLimiter(maxLines: 1, per: .seconds(1))
    private var refusalLog = LogRateLimiter(maxLines: 1, per: .seconds(10))
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
        if openConnections >= configuration.connectionLimits.maxConnections {
            return refuseConnection(socket)
        }
        let connection = HTTP1Connection(server: self, socket: socket)
        connections[ObjectIdentifier(connection)] = connection
        connection.start()
    }

    /// Over the cap: a canned 503, written by a connection that lingers (bounded), or at once.
    private func refuseConnection(_ socket: StreamSocket) {
        if let suppressed = refusalLog.admit(at: .now) {
            log.warning("refusing connections: \(openConnections) are open, the limit (http.maxConnections)"
                        + (suppressed > 0 ? "; \(suppressed) more refused since the last line" : ""))
        }
        let limit = configuration.connectionLimits.maxConnections
        var refusal = HTTPResponse.error(status: 503, error: "too_many_connections",
                                         message: "the server has \(limit) connections open, its limit; retry shortly")
        refusal.headers.append(("Retry-After", "1"))
        guard refusals < Self.maxLingeringRefusals else {
            let bytes = HTTP1ResponseEncoder.head(status: 503, headers: refusal.headers, framing: .length(refusal.body.count),
                                                  persistence: .close, date: date()) + refusal.body
            _ = bytes.withUnsafeBytes { socket.send($0) }
            return socket.close()
        }
        let connection = HTTP1Connection(server: self, socket: socket, isRefusal: true)
        refusals += 1
        connections[ObjectIdentifier(connection)] = connection
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
        connections[ObjectIdentifier(connection)] = nil
        if connection.isRefusal { refusals -= 1 }
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

    /// Takes `bytes` from the body budget; false (nothing taken) when it would pass the limit.
    func reserveBody(_ bytes: Int) -> Bool {
        guard bytes <= configuration.connectionLimits.maxBufferedBodyBytes - bufferedBodyBytes else { return false }
        bufferedBodyBytes += bytes
        return true
    }

    func releaseBody(_ bytes: Int) {
        bufferedBodyBytes -= bytes
    }

    /// The answer to a body the budget cannot take.
    var budgetRefusal: HTTPResponse {
        var response = HTTPResponse.error(status: 503, error: "server_busy",
                                          message: "the server is holding \(bufferedBodyBytes) bytes of request bodies, close to its limit "
                                              + "of \(configuration.connectionLimits.maxBufferedBodyBytes); retry shortly")
        response.headers.append(("Retry-After", "1"))
        return response
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
