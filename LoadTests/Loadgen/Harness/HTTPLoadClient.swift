import Foundation

/// A minimal blocking HTTP/1.1 client over one keep-alive TCP connection, one request at a time
/// (no pipelining), for driving the provider API from benchmark threads.
///
/// Deliberately tiny: it writes a request with `Content-Length`, reads the status line, the
/// headers and a `Content-Length` body, and keeps the connection for the next request. A
/// connection that sat idle for ``idleReconnect`` is replaced before the next request, as a
/// pooling client does: the gateway closes keep-alive connections idle for 60 s. Each instance
/// is used by one thread only.
final class HTTPLoadClient {
    /// Idle time after which the next request opens a new connection (half the gateway's default).
    static let idleReconnect = Duration.seconds(30)

    struct Response {
        var status: Int
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private var descriptor: Int32
    private let host: String
    private let port: Int
    private let fixedHeaders: String
    private var received: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 65_536)
    private var lastUsed = ContinuousClock.now

    /// Connects to a numeric IPv4 `host`; every request carries `Authorization: Bearer apiKey`.
    init(host: String, port: Int, apiKey: String) throws {
        descriptor = try Self.openConnection(host: host, port: port)
        self.host = host
        self.port = port
        fixedHeaders = "Host: \(host):\(port)\r\nAuthorization: Bearer \(apiKey)\r\nContent-Type: application/json\r\n"
    }

    private static func openConnection(host: String, port: Int) throws -> Int32 {
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
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw LoadError("cannot connect to \(host):\(port): \(reason)")
        }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return descriptor
    }

    deinit { close(descriptor) }

    /// Sends one request and waits for its whole response.
    func send(_ method: String, _ path: String, body: [UInt8] = []) throws -> Response {
        if ContinuousClock.now - lastUsed > Self.idleReconnect {
            close(descriptor)
            descriptor = try Self.openConnection(host: host, port: port)
            received = []
        }
        var message = Array("\(method) \(path) HTTP/1.1\r\n\(fixedHeaders)Content-Length: \(body.count)\r\n\r\n".utf8)
        message += body
        try writeAll(message)
        defer { lastUsed = .now }
        return try readResponse()
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw LoadError("sending to the gateway failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    private func readResponse() throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while true {
            if headEnd == nil, let range = received.firstRange(of: separator) { headEnd = range.upperBound }
            if let end = headEnd {
                let head = String(decoding: received[..<end], as: UTF8.self)
                let lines = head.split(separator: "\r\n")
                guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
                      let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
                    throw LoadError("not an HTTP/1.1 response: \(head.prefix(200))")
                }
                let length = lines.dropFirst().lazy.compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                    return Int(parts[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
                if received.count >= end + length {
                    let body = Array(received[end..<(end + length)])
                    received.removeFirst(end + length)
                    return Response(status: status, body: body)
                }
            }
            let count = scratch.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw LoadError(count == 0 ? "the gateway closed the connection" : "reading from the gateway failed: \(String(cString: strerror(errno)))")
            }
            received += scratch[..<count]
        }
    }
}
