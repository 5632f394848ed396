import Foundation
import Synchronization
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime

/// A client of the provider API for tests, over one of two transports, so that one test body
/// runs on both:
///
/// - ``Transport/live(port:)``: HTTP/1.1 over a TCP connection to the gateway on loopback (a
///   connection per request), through everything a real client goes through;
/// - ``Transport/inProcess(_:)``: straight into the running gateway's admission and router
///   (``RequestFront``) on its ingest loop, no socket: the same answers, without the HTTP server.
///
/// The in-process transport refuses what only the server decides (an unknown method, a body over
/// the gateway's `maxBodyBytes`), and a streamed answer (the live feed, feed exports) never comes
/// through it: those tests stay live. Requests block the calling thread until answered, up to
/// ``timeoutSeconds``, like a blocking socket read.
package struct GatewayTestClient: Sendable {
    package enum Transport: Sendable {
        case live(port: Int)
        case inProcess(Gateway)
    }

    package struct Response: Sendable {
        package var status: Int
        package var body: [UInt8]
        /// The status line and header lines (in process: the route's own headers, without the
        /// `Content-Length`, `Date` and `Connection` the server adds).
        package var head = ""
        /// False for a chunked body cut before its last chunk (the server closed first).
        package var isComplete = true
        package var json: JSONValue? { try? JSONParser.parse(body) }
        package var text: String { String(decoding: body, as: UTF8.self) }

        package init(status: Int, body: [UInt8], head: String = "", isComplete: Bool = true) {
            self.status = status
            self.body = body
            self.head = head
            self.isComplete = isComplete
        }

        /// The first value of a response header (name compared case-insensitively).
        package func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return nil
        }

        /// `error` of a JSON error body.
        package var errorCode: String? {
            if case .string(let code)? = json?[member: "error"] { return code }
            return nil
        }
    }

    /// Every error a request throws: no connection, no answer in time, an answer that is not HTTP.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    package let transport: Transport
    package var key: String?
    /// How long a response may take, in seconds (longer for requests a test holds on purpose).
    package var timeoutSeconds = 10

    package init(_ transport: Transport, key: String? = nil) {
        self.transport = transport
        self.key = key
    }

    /// A live client of the gateway listening on 127.0.0.1:`port`.
    package init(port: Int, key: String? = nil) {
        self.init(.live(port: port), key: key)
    }

    /// The port of a live client (the gateway's listening port in process).
    package var port: Int {
        switch transport {
        case .live(let port): port
        case .inProcess(let gateway): gateway.port ?? 0
        }
    }

    /// The same client, waiting up to `seconds` for each response.
    package func waiting(upTo seconds: Int) -> GatewayTestClient {
        var client = self
        client.timeoutSeconds = seconds
        return client
    }

    /// The same client with another API key (nil: none).
    package func with(key: String?) -> GatewayTestClient {
        var client = self
        client.key = key
        return client
    }

    package func request(_ method: String, _ path: String, json: String? = nil, key overrideKey: String?? = nil,
                         headers: [(name: String, value: String)] = []) throws -> Response {
        try request(method, path, body: json.map { Array($0.utf8) }, key: overrideKey ?? key, headers: headers)
    }

    package func request(_ method: String, _ path: String, body: [UInt8]?, key: String?, headers: [(name: String, value: String)] = []) throws -> Response {
        var fields = [(name: "Host", value: "127.0.0.1")]
        if let key { fields.append(("Authorization", "Bearer \(key)")) }
        fields += headers
        if let body { fields += [("Content-Type", "application/json"), ("Content-Length", String(body.count))] }
        switch transport {
        case .live(let port): return try Self.live(port: port, method, path, fields: fields, body: body ?? [], timeoutSeconds: timeoutSeconds)
        case .inProcess(let gateway): return try inProcess(gateway, method, path, fields: fields, body: body ?? [])
        }
    }

    private static func live(port: Int, _ method: String, _ path: String, fields: [(name: String, value: String)], body: [UInt8],
                             timeoutSeconds: Int) throws -> Response {
        // A refused connection is the client's failure like any other (a test expecting a gateway
        // to be gone expects a `Failure`).
        let fd: Int32
        do { fd = try LoopbackSocket.connect(port: port, receiveTimeout: timeoutSeconds) } catch { throw Failure(description: "\(error)") }
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nConnection: close\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        LoopbackSocket.send(Array((head + "\r\n").utf8) + body, on: fd)
        let received = LoopbackSocket.receiveAll(from: fd)
        guard let split = received.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw Failure(description: "no HTTP response head in \(received.count) bytes")
        }
        let statusLine = String(decoding: received[..<split.lowerBound], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "bad status line \(statusLine)") }
        var response = Response(status: status, body: Array(received[split.upperBound...]),
                                head: String(decoding: received[..<split.lowerBound], as: UTF8.self))
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            (response.body, response.isComplete) = dechunked(response.body)
        }
        return response
    }

    private func inProcess(_ gateway: Gateway, _ method: String, _ path: String, fields: [(name: String, value: String)],
                           body: [UInt8]) throws -> Response {
        guard let front = gateway.front else { throw Failure(description: "the gateway is not running") }
        guard let known = HTTPMethod(rawValue: method) else {
            throw Failure(description: "\(method) is answered by the HTTP server itself (501): test it live")
        }
        guard body.count <= gateway.configuration.maxBodyBytes else {
            throw Failure(description: "a body of \(body.count) bytes is refused by the HTTP server itself (413): test it live")
        }
        let answered = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        front.handle(method: known, target: path, headers: fields.map { HTTPHeaderField(name: $0.name, value: $0.value) }, body: body) { response in
            answered.withLock { $0 = response }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(timeoutSeconds)) == .success, let response = answered.withLock({ $0 }) else {
            throw Failure(description: "no answer to \(method) \(path) within \(timeoutSeconds) s (a streamed answer comes only live)")
        }
        // Joined, not trimmed: "\r\n" is one Character, so dropping two would cut the last value.
        let head = (["HTTP/1.1 \(response.status)"] + response.headers.map { "\($0.name): \($0.value)" }).joined(separator: "\r\n")
        return Response(status: response.status, body: method == "HEAD" ? [] : response.body, head: head)
    }

    /// A chunked body's data, and whether its last chunk came (the data up to the cut otherwise).
    package static func dechunked(_ bytes: [UInt8]) -> (data: [UInt8], complete: Bool) {
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
