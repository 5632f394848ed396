import CLibevent
import TouchlineCore
#if canImport(Glibc)
import Glibc
#endif

/// Limits and address of an ``HTTPServer``.
public struct HTTPServerConfiguration: Sendable {
    /// A numeric IPv4 or IPv6 address (no name lookup on the loop).
    public var host: String
    /// 0 picks a free port; read it back from ``HTTPServer/port``.
    public var port: Int
    /// Larger bodies are refused with a JSON 413 naming the size and the limit. Bodies over four
    /// times the limit are cut off by evhttp as they arrive, without being buffered whole; that
    /// 413 carries evhttp's own short HTML body.
    public var maxBodySize: Int
    /// Larger request heads (request line plus headers) are refused with 400.
    public var maxHeaderSize: Int
    /// A connection that stays silent this long while a request is read or written, or while
    /// idle between keep-alive requests, is closed.
    public var connectionTimeout: Duration
    /// Other methods are answered with a JSON 501 without reaching the handler.
    public var allowedMethods: Set<HTTPMethod>

    public init(host: String = "127.0.0.1", port: Int = 0, maxBodySize: Int = 1 << 20, maxHeaderSize: Int = 16 << 10,
                connectionTimeout: Duration = .seconds(60),
                allowedMethods: Set<HTTPMethod> = [.get, .post, .put, .delete, .patch]) {
        self.host = host
        self.port = port
        self.maxBodySize = maxBodySize
        self.maxHeaderSize = maxHeaderSize
        self.connectionTimeout = connectionTimeout
        self.allowedMethods = allowedMethods
    }
}

/// An HTTP/1.1 server (keep-alive, pipelining) on libevent's evhttp, confined to one loop.
///
/// Loop-confined: create, use and shut it down on its loop's thread (`@unchecked Sendable` only
/// so closures running on that loop can capture it). Every request becomes an ``HTTPRequest``
/// handed to `handler`, which answers it now or later on the same loop. The server answers by
/// itself, in JSON, a method it does not serve (501) and a body over the limit (413); evhttp
/// answers a malformed request or a head over the limit (400) and a body far over the limit (413)
/// with its own short HTML error page.
public final class HTTPServer: @unchecked Sendable {
    public let loop: EventLoop
    /// The bound port (useful after binding port 0).
    public let port: Int
    /// Requests handed to the handler and not yet answered or abandoned.
    public private(set) var inFlightRequests = 0
    /// True once ``shutdown(gracePeriod:completion:)`` has begun.
    public private(set) var isShuttingDown = false

    private var http: OpaquePointer?
    private var boundSocket: OpaquePointer?
    private let handler: (HTTPRequest) -> Void
    private let maxBodySize: Int
    private let allowedMethods: Set<HTTPMethod>
    private var shutdownTimer: LoopTimer?
    private var shutdownCompletion: (() -> Void)?
    /// Connections closing after their last answer during shutdown.
    private var connectionsClosing = 0
    /// The connection timeout, also the write timeout of a streamed response.
    let connectionTimeoutValue: timeval
    /// Streamed responses still open, ended when the server shuts down.
    private var openStreams: [ObjectIdentifier: HTTPResponseStream] = [:]

    /// Binds and starts serving. Loop thread only.
    public init(loop: EventLoop, configuration: HTTPServerConfiguration, handler: @escaping (HTTPRequest) -> Void) throws {
        self.loop = loop
        self.handler = handler
        guard isNumericAddress(configuration.host) else {
            throw TransportError.socket("listen address must be a numeric IPv4 or IPv6 address, got \(configuration.host)")
        }
        guard (0...65535).contains(configuration.port) else {
            throw TransportError.socket("listen port must be between 0 and 65535, got \(configuration.port)")
        }
        guard let http = evhttp_new(loop.base) else { throw TransportError.socket("evhttp_new failed") }
        guard let bound = evhttp_bind_socket_with_handle(http, configuration.host, UInt16(configuration.port)) else {
            let reason = String(cString: strerror(errno))
            evhttp_free(http)
            throw TransportError.socket("cannot listen on \(configuration.host):\(configuration.port): \(reason)")
        }
        self.http = http
        boundSocket = bound
        port = boundPort(evhttp_bound_socket_get_fd(bound))

        maxBodySize = configuration.maxBodySize
        allowedMethods = configuration.allowedMethods
        evhttp_set_max_body_size(http, configuration.maxBodySize > Int.max / 4 ? Int.max : configuration.maxBodySize * 4)
        evhttp_set_max_headers_size(http, configuration.maxHeaderSize)
        let timeoutNanoseconds = configuration.connectionTimeout.inNanoseconds
        var timeout = timeval(tv_sec: Int(timeoutNanoseconds / 1_000_000_000), tv_usec: Int(timeoutNanoseconds % 1_000_000_000 / 1000))
        evhttp_set_timeout_tv(http, &timeout)
        connectionTimeoutValue = timeout
        // All methods reach `received`, which answers the unsupported ones in JSON.
        evhttp_set_allowed_methods(http, UInt16.max)
        // Read and drop the rest of an oversized body before closing, so the client sees the
        // 413 rather than a reset while it is still sending.
        evhttp_set_flags(http, EVHTTP_SERVER_LINGERING_CLOSE)
        evhttp_set_gencb(http, { request, context in
            Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue().received(request!)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        shutdownTimer?.cancel()
        if let http { evhttp_free(http) }
    }

    private func received(_ handle: OpaquePointer) {
        let method = HTTPMethod(evhttpType: evhttp_request_get_command(handle).rawValue)
        guard let method, allowedMethods.contains(method) else {
            let name = method?.rawValue ?? "this method"
            return HTTPResponse.error(status: 501, error: "method_not_implemented", message: "the server does not implement \(name)")
                .send(on: handle, closingConnection: isShuttingDown)
        }
        let bodySize = evbuffer_get_length(evhttp_request_get_input_buffer(handle))
        guard bodySize <= maxBodySize else {
            return HTTPResponse.error(status: 413, error: "body_too_large",
                                      message: "the request body is \(bodySize) bytes; the limit is \(maxBodySize) bytes")
                .send(on: handle, closingConnection: isShuttingDown)
        }
        inFlightRequests += 1
        let request = HTTPRequest(handle: handle, method: method, server: self)
        if isShuttingDown {
            request.respond(.error(status: 503, error: "shutting_down", message: "the server is shutting down"))
        } else {
            handler(request)
        }
    }

    func streamStarted(_ stream: HTTPResponseStream) {
        openStreams[ObjectIdentifier(stream)] = stream
    }

    func streamEnded(_ stream: HTTPResponseStream) {
        openStreams[ObjectIdentifier(stream)] = nil
    }

    func requestFinished() {
        inFlightRequests -= 1
        finishShutdownIfDrained()
    }

    /// During shutdown, a connection whose last answer is being written: the server is freed only
    /// once evhttp has written it and closed the connection.
    func drainAfterResponse(_ connection: OpaquePointer) {
        connectionsClosing += 1
        evhttp_connection_set_closecb(connection, { _, context in
            let server = Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue()
            server.connectionsClosing -= 1
            server.finishShutdownIfDrained()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Called from evhttp's callbacks (a connection being freed), so the evhttp itself is freed
    /// in a later turn of the loop, never inside them.
    private func finishShutdownIfDrained() {
        guard isShuttingDown && inFlightRequests == 0 && connectionsClosing == 0 else { return }
        loop.execute { self.finishShutdown() }
    }

    /// Stops accepting connections, ends streamed responses, lets requests in flight be answered
    /// for up to `gracePeriod` (answers then carry `Connection: close`; new requests on open
    /// connections get 503), then closes every connection and frees the server. `completion`
    /// runs on the loop once the server is freed (also for a second call made meanwhile). Loop
    /// thread only.
    public func shutdown(gracePeriod: Duration, completion: @escaping () -> Void = {}) {
        guard let http else { return completion() }
        if isShuttingDown {
            let earlier = shutdownCompletion
            shutdownCompletion = { earlier?(); completion() }
            return
        }
        isShuttingDown = true
        shutdownCompletion = completion
        if let boundSocket { evhttp_del_accept_socket(http, boundSocket) }
        boundSocket = nil
        // A stream would hold the shutdown for the whole grace period: end each one now.
        for stream in openStreams.values { stream.close() }
        finishShutdownIfDrained()
        let timer = LoopTimer(loop: loop) { [unowned self] in finishShutdown() }
        timer.schedule(after: gracePeriod)
        shutdownTimer = timer
    }

    private func finishShutdown() {
        guard let http else { return }
        self.http = nil
        shutdownTimer?.cancel()
        shutdownTimer = nil
        // Requests still pending are abandoned through their connections' close callbacks.
        evhttp_free(http)
        let completion = shutdownCompletion
        shutdownCompletion = nil
        completion?()
    }
}

private func isNumericAddress(_ host: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
}

private func boundPort(_ fd: Int32) -> Int {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    return withUnsafeMutablePointer(to: &storage) { ptr in
        ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        if ptr.pointee.ss_family == sa_family_t(AF_INET6) {
            return ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        }
        return ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
    }
}
