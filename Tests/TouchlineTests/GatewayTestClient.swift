import Foundation
import TouchlineCore

/// A minimal HTTP/1.1 client over a POSIX socket (one request per connection), enough to drive
/// the provider API in tests without any client library.
struct GatewayTestClient {
    struct Response {
        var status: Int
        var body: [UInt8]
        /// The status line and header lines.
        var head = ""
        /// False for a chunked body cut before its last chunk (the server closed first).
        var isComplete = true
        var json: JSONValue? { try? JSONParser.parse(body) }
        var text: String { String(decoding: body, as: UTF8.self) }
        /// The first value of a response header (name compared case-insensitively).
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return nil
        }
        /// `error` of a JSON error body.
        var errorCode: String? {
            if case .string(let code)? = json?[member: "error"] { return code }
            return nil
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let port: Int
    var key: String?
    /// How long a response may take, in seconds (longer for requests a test holds on purpose).
    var timeoutSeconds = 10

    /// The same client, waiting up to `seconds` for each response.
    func waiting(upTo seconds: Int) -> GatewayTestClient {
        var client = self
        client.timeoutSeconds = seconds
        return client
    }

    func request(_ method: String, _ path: String, json: String? = nil, key overrideKey: String?? = nil,
                 headers: [(name: String, value: String)] = []) throws -> Response {
        try request(method, path, body: json.map { Array($0.utf8) }, key: overrideKey ?? key, headers: headers)
    }

    /// A blocking TCP socket connected to 127.0.0.1:`port`, reads timing out after `timeout` seconds;
    /// from the loopback address `source` when given (another client address to the gateway,
    /// such as 127.0.0.2).
    static func connectLoopback(port: Int, timeout seconds: Int = 10, source: String? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let message = String(cString: strerror(errno))
                close(fd)
                throw Failure(description: "binding to \(source): \(message)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connecting to 127.0.0.1:\(port): \(message)")
        }
        return fd
    }

    func request(_ method: String, _ path: String, body: [UInt8]?, key: String?, headers: [(name: String, value: String)] = []) throws -> Response {
        let fd = try Self.connectLoopback(port: port, timeout: timeoutSeconds)
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + (body ?? [])
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }  // the server may answer (413) and close before reading all
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        guard let split = received.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw Failure(description: "no HTTP response head in \(received.count) bytes")
        }
        let statusLine = String(decoding: received[..<split.lowerBound], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "bad status line \(statusLine)") }
        var response = Response(status: status, body: Array(received[split.upperBound...]),
                                head: String(decoding: received[..<split.lowerBound], as: UTF8.self))
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            (response.body, response.isComplete) = Self.dechunked(response.body)
        }
        return response
    }

    /// A chunked body's data, and whether its last chunk came (the data up to the cut otherwise).
    static func dechunked(_ bytes: [UInt8]) -> (data: [UInt8], complete: Bool) {
        var data: [UInt8] = []
        var rest = bytes[...]
        while let lineEnd = rest.firstRange(of: Array("\r\n".utf8)) {
            let sizeText = String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { break }
            if size == 0 { return (data, true) }
            let start = lineEnd.upperBound
            guard rest.distance(from: start, to: rest.endIndex) >= size + 2 else {
                data += rest[start...].prefix(size)
                break
            }
            data += rest[start..<rest.index(start, offsetBy: size)]
            rest = rest[rest.index(start, offsetBy: size + 2)...]
        }
        return (data, false)
    }
}
