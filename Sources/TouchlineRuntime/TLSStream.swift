import CLibevent
import COpenSSL
import CShims
import TouchlineCore
#if canImport(Glibc)
import Glibc
#endif

/// Why a TLS stream failed or closed, in words an operator can act on.
public enum TransportError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The host name did not resolve.
    case dns(host: String, reason: String)
    /// TCP failed (refused, unreachable, reset...).
    case socket(String)
    /// The TLS handshake or record layer failed (certificate, protocol...).
    case tls(String)
    /// The server did not select HTTP/2 via ALPN.
    case alpnNotH2(selected: String?)
    /// Nothing happened within the connect timeout.
    case timeout(String)
    /// The peer closed the connection.
    case closedByPeer
    /// This side closed the stream.
    case closedLocally

    public var description: String {
        switch self {
        case .dns(let host, let reason): "cannot resolve host \(host): \(reason)"
        case .socket(let reason): "connection failed: \(reason)"
        case .tls(let reason): "TLS failed: \(reason)"
        case .alpnNotH2(let selected):
            "server did not negotiate HTTP/2 via ALPN (selected: \(selected ?? "none")); APNs requires h2"
        case .timeout(let what): "timed out: \(what)"
        case .closedByPeer: "connection closed by peer"
        case .closedLocally: "connection closed locally"
        }
    }
}

/// Receives a ``TLSStream``'s events, always on the stream's loop.
public protocol TLSStreamDelegate: AnyObject {
    /// The TLS handshake finished and HTTP/2 was negotiated.
    func streamDidConnect(_ stream: TLSStream)
    /// Decrypted bytes arrived. The buffer is valid only during the call.
    func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer)
    /// The output buffer drained below the low-water mark: a good time to write more.
    func streamDidDrain(_ stream: TLSStream)
    /// The stream is closed for good; no further calls follow.
    func stream(_ stream: TLSStream, didCloseWith error: TransportError)
}

/// A TLS connection over TCP, built on libevent's OpenSSL bufferevent. Loop-confined.
///
/// A client stream may also be plain TCP (``connect(loop:context:host:port:connectTimeout:delegate:)``
/// with no context), for webhook receivers on `http://`: the same resolver, timeouts and
/// callbacks, without the TLS layer.
///
/// Output is buffered by libevent; callers apply back-pressure by checking
/// ``pendingOutputBytes`` and waiting for ``TLSStreamDelegate/streamDidDrain(_:)``.
public final class TLSStream: @unchecked Sendable {
    public let loop: EventLoop
    public weak var delegate: TLSStreamDelegate?
    /// The host this stream connects to (clients) or "peer" (accepted streams); for messages.
    public let peerName: String
    private var bev: OpaquePointer?
    private var ssl: OpaquePointer?
    private var connected = false
    private var closed = false
    /// What ALPN must select for the stream to count as connected (nil: anything, or no TLS).
    private var requiredProtocol: String?
    /// The output size under which ``TLSStreamDelegate/streamDidDrain(_:)`` is called.
    public static let lowWaterMark = 64 * 1024

    private init(loop: EventLoop, peerName: String) {
        self.loop = loop
        self.peerName = peerName
    }

    deinit {
        if let bev { bufferevent_free(bev) }
    }

    /// Starts connecting to `host:port` (fresh DNS lookup, TCP, TLS handshake, ALPN check; with
    /// a nil `context`, plain TCP). The outcome arrives at the delegate: `streamDidConnect` or `didCloseWith`.
    public static func connect(loop: EventLoop, context: TLSContext?, host: String, port: Int,
                               connectTimeout: Duration = .seconds(10), delegate: TLSStreamDelegate) -> TLSStream {
        let stream = TLSStream(loop: loop, peerName: "\(host):\(port)")
        stream.delegate = delegate
        do {
            let made: OpaquePointer?
            if let context {
                let ssl = try context.makeSSL(verifyingHost: host)
                stream.ssl = ssl
                stream.requiredProtocol = context.applicationProtocol
                made = bufferevent_openssl_socket_new(loop.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))
                if made == nil { SSL_free(ssl) }
            } else {
                made = bufferevent_socket_new(loop.base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))
            }
            guard let bev = made else {
                stream.failSoon(.socket("cannot create socket buffer"))
                return stream
            }
            stream.bev = bev
            stream.install(timeout: connectTimeout)
            if bufferevent_socket_connect_hostname(bev, loop.dnsBase, AF_UNSPEC, host, Int32(port)) != 0 {
                stream.failSoon(stream.classifyError())
            }
        } catch {
            stream.failSoon(.tls("\(error)"))
        }
        return stream
    }

    /// Wraps a socket accepted by a listener; the server side of the handshake starts at once.
    public static func accept(loop: EventLoop, context: TLSContext, socket fd: Int32, delegate: TLSStreamDelegate) -> TLSStream? {
        let stream = TLSStream(loop: loop, peerName: "peer")
        stream.delegate = delegate
        guard let ssl = try? context.makeSSL(verifyingHost: nil) else { Glibc.close(fd); return nil }
        stream.ssl = ssl
        stream.requiredProtocol = context.applicationProtocol
        guard let bev = bufferevent_openssl_socket_new(loop.base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                       Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            SSL_free(ssl)
            Glibc.close(fd)
            return nil
        }
        setNoDelay(fd)
        stream.bev = bev
        stream.install(timeout: .seconds(10))
        return stream
    }

    private func install(timeout: Duration) {
        if ssl != nil { bufferevent_openssl_set_allow_dirty_shutdown(bev, 1) }
        bufferevent_setcb(bev, { _, ctx in
            Unmanaged<TLSStream>.fromOpaque(ctx!).takeUnretainedValue().readable()
        }, { _, ctx in
            Unmanaged<TLSStream>.fromOpaque(ctx!).takeUnretainedValue().writable()
        }, { _, what, ctx in
            Unmanaged<TLSStream>.fromOpaque(ctx!).takeUnretainedValue().event(what)
        }, Unmanaged.passUnretained(self).toOpaque())
        bufferevent_setwatermark(bev, Int16(EV_WRITE), TLSStream.lowWaterMark, 0)
        var tv = timeval(tv_sec: Int(timeout.inNanoseconds / 1_000_000_000), tv_usec: Int((timeout.inNanoseconds % 1_000_000_000) / 1000))
        bufferevent_set_timeouts(bev, &tv, &tv)
        bufferevent_enable(bev, Int16(EV_READ | EV_WRITE))
    }

    /// Bytes queued for sending and not yet handed to the kernel.
    public var pendingOutputBytes: Int {
        guard let bev else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(bev))
    }

    /// Queues bytes for sending (copied).
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard let bev, !closed, bytes.count > 0 else { return }
        bufferevent_write(bev, bytes.baseAddress, bytes.count)
    }

    /// Closes the stream now; the delegate hears `didCloseWith(.closedLocally)` once.
    public func close() {
        finish(.closedLocally)
    }

    /// Closes after queued output is flushed (bounded by the write timeout). With a `linger`
    /// (servers), the sending side is shut down instead, so the peer reads everything and then
    /// an end of file, while incoming bytes are read and dropped until the peer closes or
    /// `linger` passes.
    ///
    /// Closing a socket with unread input makes the kernel reset the connection, and a reset
    /// destroys what the peer has not read yet: a server's last responses and its GOAWAY,
    /// typically, since a busy client keeps sending until it reads the GOAWAY.
    public func closeAfterFlush(linger: Duration = .zero) {
        guard !closed, !closeWhenDrained else { return }
        closeWhenDrained = true
        lingerTime = linger
        if pendingOutputBytes == 0 { finishFlushing() }
    }

    private func finishFlushing() {
        if lingerTime > .zero { startLingering() } else { close() }
    }
    private var closeWhenDrained = false
    private var lingerTime = Duration.zero
    private var lingering = false

    private func startLingering() {
        guard let bev, !lingering else { return }
        lingering = true
        shutdown(bufferevent_getfd(bev), Int32(SHUT_WR))
        let ns = lingerTime.inNanoseconds
        var tv = timeval(tv_sec: Int(ns / 1_000_000_000), tv_usec: Int((ns % 1_000_000_000) / 1000))
        bufferevent_set_timeouts(bev, &tv, nil)
    }

    private func readable() {
        guard let bev else { return }
        let input = bufferevent_get_input(bev)
        if closeWhenDrained, let input {
            evbuffer_drain(input, evbuffer_get_length(input))
            return
        }
        var chunks = [iovec](repeating: iovec(), count: 8)
        while !closed, let input, evbuffer_get_length(input) > 0 {
            let n = Int(evbuffer_peek(input, -1, nil, &chunks, 8))
            var consumed = 0
            for i in 0..<min(n, 8) {
                delegate?.stream(self, didRead: UnsafeRawBufferPointer(start: chunks[i].iov_base, count: chunks[i].iov_len))
                consumed += chunks[i].iov_len
                if closed { return }
            }
            evbuffer_drain(input, consumed)
        }
    }

    private func writable() {
        if closeWhenDrained {
            if pendingOutputBytes == 0 { finishFlushing() }
            return
        }
        if connected { delegate?.streamDidDrain(self) }
    }

    private func event(_ what: Int16) {
        if what & Int16(BEV_EVENT_CONNECTED) != 0 {
            handshakeDone()
            return
        }
        if lingering {
            finish(.closedLocally)
            return
        }
        if what & Int16(BEV_EVENT_TIMEOUT) != 0 {
            finish(.timeout(connected ? "no progress on \(peerName)" : "connecting to \(peerName)"))
        } else if what & Int16(BEV_EVENT_EOF) != 0 {
            // A refused or reset connection reaches the TLS layer as an end of file during the
            // handshake; errno still names the socket error then.
            let code = errno
            if connected {
                finish(.closedByPeer)
            } else if [ECONNREFUSED, ECONNRESET, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH].contains(code) {
                finish(.socket("\(peerName): \(String(cString: strerror(code)))"))
            } else {
                finish(.tls("\(peerName) closed the connection during the TLS handshake"))
            }
        } else {
            finish(classifyError())
        }
    }

    private func handshakeDone() {
        guard let bev else { return }
        if let ssl, let requiredProtocol {
            var proto: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &proto, &length)
            let selected = proto.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
            guard selected == requiredProtocol else {
                finish(.alpnNotH2(selected: selected))
                return
            }
        }
        setNoDelay(bufferevent_getfd(bev))
        connected = true
        bufferevent_set_timeouts(bev, nil, nil)
        delegate?.streamDidConnect(self)
    }

    /// Turns the pending libevent/OpenSSL/socket error into words.
    private func classifyError() -> TransportError {
        guard let bev else { return .socket("no socket") }
        let dnsError = bufferevent_socket_get_dns_error(bev)
        if dnsError != 0 {
            let host = String(peerName.split(separator: ":").dropLast().joined(separator: ":"))
            return .dns(host: host, reason: String(cString: evutil_gai_strerror(dnsError)))
        }
        var sslErrors: [String] = []
        while true {
            let code = bufferevent_get_openssl_error(bev)
            if code == 0 { break }
            // libevent also queues SSL_get_error()'s small result codes, which are not OpenSSL errors.
            guard ERR_GET_LIB(code) != 0 else { continue }
            if ERR_GET_REASON(code) == SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL { return .alpnNotH2(selected: nil) }
            sslErrors.append(String(cBuffer: 256) { ERR_error_string_n(code, $0, 256) })
        }
        if let ssl {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                return .tls("certificate verification of \(peerName) failed: \(String(cString: X509_verify_cert_error_string(verify)))")
            }
        }
        if !sslErrors.isEmpty { return .tls(sslErrors.joined(separator: "; ")) }
        let code = errno
        if code != 0 { return .socket("\(peerName): \(String(cString: strerror(code)))") }
        return connected ? .closedByPeer : .socket("\(peerName): connection failed")
    }

    /// Reports a failure found before any libevent callback can: the delegate hears it on the next loop turn.
    private func failSoon(_ error: TransportError) {
        let timer = LoopTimer(loop: loop) { [weak self] in self?.finish(error) }
        pendingFailure = timer
        timer.schedule(after: .zero)
    }
    private var pendingFailure: LoopTimer?

    private func finish(_ error: TransportError) {
        guard !closed else { return }
        closed = true
        connected = false
        if let bev {
            bufferevent_disable(bev, Int16(EV_READ | EV_WRITE))
            bufferevent_setcb(bev, nil, nil, nil, nil)
            bufferevent_free(bev)
            self.bev = nil
        }
        delegate?.stream(self, didCloseWith: error)
    }
}

private func setNoDelay(_ fd: Int32) {
    guard fd >= 0 else { return }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
}
