import Foundation

/// Blocking TCP sockets on 127.0.0.1 for tests that put bytes on the wire themselves (raw HTTP,
/// a receiver that never answers, a port held taken). Each call returns a descriptor the caller
/// owns and closes once; a failed call has closed what it opened.
public enum LoopbackSocket {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// A socket connected to 127.0.0.1:`port`, its reads timing out after `receiveTimeout`
    /// seconds; from the loopback address `source` when given (another client address to the
    /// server, such as 127.0.0.2); with `TCP_NODELAY` when `noDelay`.
    public static func connect(port: Int, receiveTimeout seconds: Int = 10, source: String? = nil, noDelay: Bool = false) throws -> Int32 {
        let fd = try open()
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if noDelay {
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = address(source, port: 0)
            guard withSocketAddress(&local, { Glibc.bind(fd, $0, $1) }) == 0 else { throw closing(fd, "binding to \(source)") }
        }
        var remote = address("127.0.0.1", port: port)
        guard withSocketAddress(&remote, { Glibc.connect(fd, $0, $1) }) == 0 else { throw closing(fd, "connecting to 127.0.0.1:\(port)") }
        return fd
    }

    /// A socket bound to a free port of 127.0.0.1 and listening (`backlog`), and that port.
    public static func listen(backlog: Int32 = 16) throws -> (port: Int, fd: Int32) {
        let fd = try open()
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var local = address("127.0.0.1", port: 0)
        guard withSocketAddress(&local, { Glibc.bind(fd, $0, $1) }) == 0, Glibc.listen(fd, backlog) == 0 else { throw closing(fd, "listening") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard withUnsafeMutablePointer(to: &local, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }) == 0 else {
            throw closing(fd, "reading the bound port")
        }
        return (Int(UInt16(bigEndian: local.sin_port)), fd)
    }

    /// A port of 127.0.0.1 that was free a moment ago (bound, read and released): for a server
    /// to listen on, or for a connection that must find nothing there.
    public static func freePort() throws -> Int {
        let (port, fd) = try listen(backlog: 1)
        Glibc.close(fd)
        return port
    }

    /// True when something accepts connections on 127.0.0.1:`port` now.
    public static func canConnect(port: Int) -> Bool {
        guard let fd = try? connect(port: port) else { return false }
        Glibc.close(fd)
        return true
    }

    /// Sends all of `bytes`; stops early, without an error, when the peer has closed (a server
    /// may answer and close before reading everything). Returns the bytes sent.
    @discardableResult
    public static func send(_ bytes: [UInt8], on fd: Int32) -> Int {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }
            sent += n
        }
        return sent
    }

    /// Reads until the peer closes, the receive timeout passes, or `limit` bytes have come.
    public static func receiveAll(from fd: Int32, limit: Int = .max) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while received.count < limit {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += chunk[0..<n]
        }
        return received
    }

    private static func open() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        return fd
    }

    private static func address(_ host: String, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        return address
    }

    private static func withSocketAddress(_ address: inout sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    /// The error of a failed `what`, with `errno` read before `fd` is closed.
    private static func closing(_ fd: Int32, _ what: String) -> Failure {
        let failure = Failure(description: "\(what): \(String(cString: strerror(errno)))")
        Glibc.close(fd)
        return failure
    }
}
