import Foundation

/// A one-request-per-connection HTTP/1.1 client over a plain socket, for the command line's own
/// calls to a gateway (`touchline health`, the demo).
///
/// Deliberately tiny: `http://` only, `Connection: close`, the body read to the end of the
/// stream. It keeps Foundation's URL loading (and with it libcurl) out of the binary, so the
/// runtime image needs no HTTP client library.
struct PlainHTTPClient {
    struct Response {
        var status: Int
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let host: String
    let port: Int
    /// Connecting, sending and each read give up after this long.
    var timeout: Duration = .seconds(5)

    /// The client for an `http://HOST:PORT` URL and the path (with query) it names.
    static func parse(_ url: String) throws(Failure) -> (client: PlainHTTPClient, path: String) {
        guard url.hasPrefix("http://") else { throw Failure(description: "only http:// URLs are supported, got \(url)") }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        let host: Substring
        let portText: Substring?
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            portText = after.hasPrefix(":") ? after.dropFirst() : nil
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
            portText = nil
        }
        guard !host.isEmpty, let port = portText.map({ Int($0) }) ?? 80, (1...65535).contains(port) else {
            throw Failure(description: "cannot read host and port in \(url)")
        }
        return (PlainHTTPClient(host: String(host), port: port), path.isEmpty ? "/" : String(path))
    }

    /// Sends one request and reads the whole answer (blocking the calling thread).
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws(Failure) -> Response {
        let socket = try connect()
        defer { close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host.contains(":") ? "[\(host)]" : host):\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "sending to \(host):\(port) failed: \(String(cString: strerror(errno)))") }
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else {
                throw Failure(description: "reading from \(host):\(port) failed: \(String(cString: strerror(errno)))")
            }
            received += buffer[..<count]
        }
        guard let end = received.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw Failure(description: "\(host):\(port) closed the connection without an HTTP answer")
        }
        let statusLine = String(decoding: received[..<end.lowerBound], as: UTF8.self).prefix { $0 != "\r" }
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw Failure(description: "\(host):\(port) answered something other than HTTP/1.1: \(statusLine.prefix(80))")
        }
        return Response(status: status, body: Array(received[end.upperBound...]))
    }

    /// A connected TCP socket with send and receive timeouts, trying each address of `host`.
    private func connect() throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let looked = getaddrinfo(host, String(port), &hints, &list)
        guard looked == 0, let first = list else {
            throw Failure(description: "cannot resolve \(host): \(String(cString: gai_strerror(looked)))")
        }
        defer { freeaddrinfo(list) }
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        var limit = timeval(tv_sec: Int(nanoseconds / 1_000_000_000), tv_usec: Int(nanoseconds % 1_000_000_000 / 1000))
        var reason = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let socket = Glibc.socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard socket >= 0 else { continue }
            // On Linux the send timeout also bounds connect().
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return socket }
            reason = String(cString: strerror(errno))
            close(socket)
        }
        throw Failure(description: "cannot connect to \(host):\(port): \(reason)")
    }
}
