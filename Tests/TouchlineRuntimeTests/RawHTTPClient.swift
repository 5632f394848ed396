import Foundation
import Synchronization
import TouchlineRuntime

/// A minimal HTTP/1.1 client over a blocking POSIX socket, so tests control exactly what goes on
/// the wire: several requests on one connection, pipelining, garbage, closing early.
/// `@unchecked Sendable` so one thread may send (a trickle) while another reads; only readers
/// touch the read buffer.
final class RawHTTPClient: @unchecked Sendable {
    struct Response {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        /// The body as a JSON object (empty when it is not one).
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`, from the loopback address `source` when given (another
    /// client address to the server, such as 127.0.0.2).
    init(port: Int, receiveTimeoutSeconds: Int = 10, source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw Failure(description: "bind to \(source): \(String(cString: strerror(errno)))") }
        }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // No close here: a class whose init throws once every property is set still runs its
        // deinit, which closes `fd`; a second close could take a descriptor another test
        // has opened since (a SQLite file, a socket) from under it.
        guard result == 0 else { throw Failure(description: "connect: \(String(cString: strerror(errno)))") }
    }

    deinit { Glibc.close(fd) }

    /// A request with `Content-Length` when there is a body.
    static func request(_ method: String, _ target: String, headers: [String] = [], body: [UInt8] = []) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for header in headers { head += header + "\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// Sends one request and reads its response.
    func exchange(_ method: String, _ target: String, headers: [String] = [], body: [UInt8] = []) throws -> Response {
        try send(Self.request(method, target, headers: headers, body: body))
        guard let response = try readResponse() else { throw Failure(description: "connection closed before a response") }
        return response
    }

    /// The next response, or nil if the server closed the connection first.
    func readResponse() throws -> Response? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while true {
            if buffer.count >= 4 {
                headEnd = (0...(buffer.count - 4)).first { buffer[$0..<$0 + 4].elementsEqual(separator) }
            }
            if headEnd != nil { break }
            guard try fill() else { return nil }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "bad status line in \(head)") }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length {
            guard try fill() else { throw Failure(description: "connection closed inside a body") }
        }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// The bytes up to and including the next `marker` (a streamed body read piece by piece),
    /// or nil if the server closed the connection first.
    func read(through marker: [UInt8]) throws -> [UInt8]? {
        while true {
            if let range = buffer.firstRange(of: marker) {
                let bytes = Array(buffer[..<range.upperBound])
                buffer.removeFirst(range.upperBound)
                return bytes
            }
            guard try fill() else { return nil }
        }
    }

    /// Reads and drops `count` bytes (a large streamed piece); false if the server closed first.
    func discard(_ count: Int) throws -> Bool {
        var left = count
        while left > 0 {
            if buffer.isEmpty { guard try fill() else { return false } }
            let taken = min(left, buffer.count)
            buffer.removeFirst(taken)
            left -= taken
        }
        return true
    }

    /// True when the server has closed the connection (reads EOF, after any pending responses).
    func isClosedByServer() -> Bool {
        (try? fill()) == false
    }

    /// Sends `text` as it is (no framing added).
    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Everything the server sends until it closes (or the receive timeout passes), and whether
    /// it closed with a reset instead of an orderly end.
    func readUntilClosed() -> (bytes: [UInt8], reset: Bool) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[..<count])
                continue
            }
            let reset = count < 0 && errno == ECONNRESET
            defer { buffer.removeAll() }
            return (buffer, reset)
        }
    }

    /// Closes the socket now (the client going away).
    func closeNow() { shutdown(fd, Int32(SHUT_RDWR)) }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw Failure(description: "recv: \(String(cString: strerror(errno)))")
        }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }
}

/// A count shared between a test and its handler.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func add() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// A server on its own loop for one test.
final class ServerFixture: Sendable {
    let loop: EventLoop
    let server: HTTPServer

    init(configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
         handler: @escaping @Sendable (HTTPRequest) -> Void) throws {
        loop = EventLoop.start(name: "http-test")
        let loop = loop
        server = try loop.sync { try HTTPServer(loop: loop, configuration: configuration, handler: handler) }
    }

    convenience init<Authorizer>(configuration: HTTPServerConfiguration = HTTPServerConfiguration(), router: HTTPRouter<Authorizer>) throws {
        try self.init(configuration: configuration) { router.handle($0) }
    }

    var port: Int { server.port }

    var inFlightRequests: Int { (try? loop.sync { [server] in server.inFlightRequests }) ?? -1 }
    var bufferedBodyBytes: Int { (try? loop.sync { [server] in server.bufferedBodyBytes }) ?? -1 }
    var openConnections: Int { (try? loop.sync { [server] in server.openConnections }) ?? -1 }
    var figures: HTTPServerFigures { (try? loop.sync { [server] in server.figures }) ?? HTTPServerFigures() }

    func stop() {
        let done = DispatchSemaphore(value: 0)
        loop.execute { [server] in server.shutdown(gracePeriod: .seconds(1)) { done.signal() } }
        done.wait()
        loop.stopAndWait()
    }
}
