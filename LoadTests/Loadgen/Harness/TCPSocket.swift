import Foundation

/// Blocking TCP sockets to a numeric IPv4 address, for the load clients: the well-behaved
/// ``HTTPLoadClient`` and the soak's slow clients, which write and read raw bytes at their own pace.
enum TCPSocket {
    /// A connected socket with `TCP_NODELAY` (each small write leaves at once: a trickled head
    /// must reach the gateway byte by byte). `receiveTimeout` bounds each `recv` (0: none).
    static func connect(host: String, port: Int, receiveTimeout: Double = 0) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoadError("socket() failed: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(descriptor)
            throw LoadError("'\(host)' is not a numeric IPv4 address")
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw LoadError("cannot connect to \(host):\(port): \(reason)")
        }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if receiveTimeout > 0 { setReceiveTimeout(descriptor, seconds: receiveTimeout) }
        return descriptor
    }

    /// Bounds each later `recv` on `descriptor` (EAGAIN once it passes).
    static func setReceiveTimeout(_ descriptor: Int32, seconds: Double) {
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes all of `bytes`, or throws.
    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw LoadError("sending to the gateway failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }
}
