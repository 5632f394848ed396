import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on one loop that hands each accepted socket to a callback. Loop-confined.
///
/// The callback may wrap the socket in a ``TLSStream`` on this loop or pass the descriptor to
/// another loop through ``EventLoop/execute(_:)`` (a plain `Int32` is safe to hand over).
public final class TCPListener: @unchecked Sendable {
    private var listener: OpaquePointer?
    /// Receives each accepted socket (non-blocking, close-on-exec); replaceable on the loop.
    var onAccept: (Int32) -> Void
    /// Keeps the `event_base` alive until the listener is freed.
    private let loop: EventLoop
    /// The bound port (useful after binding port 0).
    public private(set) var port: Int = 0
    /// Runs with `errno` when `accept()` fails for a reason other than a retriable one (EMFILE,
    /// ENFILE, ENOBUFS, ENOMEM). Without it libevent only logs a warning and keeps trying on every
    /// turn of the loop, which spins a CPU while descriptors are exhausted; with it the owner can
    /// ``pause()`` and ``resume()`` later.
    public var onAcceptError: ((Int32) -> Void)? {
        didSet {
            guard let listener else { return }
            evconnlistener_set_error_cb(listener, onAcceptError == nil ? nil : { _, ctx in
                let error = errno
                Unmanaged<TCPListener>.fromOpaque(ctx!).takeUnretainedValue().onAcceptError?(error)
            })
        }
    }

    /// Binds `host:port` (port 0 = any free port) and starts accepting.
    public init(loop: EventLoop, host: String, port: Int, backlog: Int32 = 1024, onAccept: @escaping (Int32) -> Void) throws {
        self.loop = loop
        self.onAccept = onAccept
        var storage = sockaddr_storage()
        let length = try fillSocketAddress(&storage, host: host, port: port)
        let flags = UInt32(LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC)
        listener = withUnsafePointer(to: &storage) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                evconnlistener_new_bind(loop.base, { _, fd, _, _, ctx in
                    Unmanaged<TCPListener>.fromOpaque(ctx!).takeUnretainedValue().onAccept(fd)
                }, Unmanaged.passUnretained(self).toOpaque(), flags, backlog, sa, Int32(length))
            }
        }
        guard let listener else {
            throw TransportError.socket("cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        var bound = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &bound) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                _ = getsockname(evconnlistener_get_fd(listener), sa, &boundLength)
            }
        }
        self.port = socketPort(bound)
    }

    /// Stops accepting for now; connections wait in the kernel's backlog until ``resume()``.
    public func pause() {
        if let listener { evconnlistener_disable(listener) }
    }

    /// Accepts again after ``pause()``.
    public func resume() {
        if let listener { evconnlistener_enable(listener) }
    }

    /// Stops accepting and closes the listening socket.
    public func close() {
        if let listener { evconnlistener_free(listener) }
        listener = nil
    }

    deinit { close() }
}

private func fillSocketAddress(_ storage: inout sockaddr_storage, host: String, port: Int) throws -> Int {
    var v4 = sockaddr_in()
    v4.sin_family = sa_family_t(AF_INET)
    v4.sin_port = in_port_t(UInt16(port).bigEndian)
    if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
        withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: v4) { dst.copyMemory(from: $0) } }
        return MemoryLayout<sockaddr_in>.size
    }
    var v6 = sockaddr_in6()
    v6.sin6_family = sa_family_t(AF_INET6)
    v6.sin6_port = in_port_t(UInt16(port).bigEndian)
    if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
        withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: v6) { dst.copyMemory(from: $0) } }
        return MemoryLayout<sockaddr_in6>.size
    }
    throw TransportError.socket("listen address must be a numeric IPv4 or IPv6 address, got \(host)")
}

private func socketPort(_ storage: sockaddr_storage) -> Int {
    var copy = storage
    return withUnsafePointer(to: &copy) { ptr in
        if storage.ss_family == sa_family_t(AF_INET) {
            return ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        return ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
    }
}
