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
        /// The answer said `Connection: close`: it is the connection's last.
        var closesConnection = false
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private var descriptor: Int32
    private let host: String
    private let port: Int
    private let timeout: Double
    private let fixedHeaders: String
    private var received: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 65_536)
    private var lastUsed = ContinuousClock.now

    /// Connects to a numeric IPv4 `host`; every request carries `Authorization: Bearer apiKey`.
    /// With a `timeout` (seconds), a response that does not arrive within it fails the request.
    init(host: String, port: Int, apiKey: String, timeout: Double = 0) throws {
        descriptor = try TCPSocket.connect(host: host, port: port, receiveTimeout: timeout)
        self.host = host
        self.port = port
        self.timeout = timeout
        fixedHeaders = "Host: \(host):\(port)\r\nAuthorization: Bearer \(apiKey)\r\nContent-Type: application/json\r\n"
    }

    deinit { close(descriptor) }

    /// Sends one request and waits for its whole response.
    func send(_ method: String, _ path: String, body: [UInt8] = []) throws -> Response {
        if ContinuousClock.now - lastUsed > Self.idleReconnect {
            close(descriptor)
            descriptor = try TCPSocket.connect(host: host, port: port, receiveTimeout: timeout)
            received = []
        }
        var message = Array("\(method) \(path) HTTP/1.1\r\n\(fixedHeaders)Content-Length: \(body.count)\r\n\r\n".utf8)
        message += body
        let started = monotonicNanoseconds()
        try writeAll(message)
        defer { lastUsed = .now }
        let response = try readResponse()
        LoadProgress.shared.requestAnswered(after: monotonicNanoseconds() - started)
        return response
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        try TCPSocket.writeAll(descriptor, bytes)
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
                let fields = lines.dropFirst().compactMap { line -> (String, String)? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2 else { return nil }
                    return (parts[0].lowercased(), parts[1].trimmingCharacters(in: .whitespaces))
                }
                let length = fields.first { $0.0 == "content-length" }.flatMap { Int($0.1) } ?? 0
                if received.count >= end + length {
                    let body = Array(received[end..<(end + length)])
                    received.removeFirst(end + length)
                    return Response(status: status, body: body,
                                    closesConnection: fields.contains { $0.0 == "connection" && $0.1.lowercased() == "close" })
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
