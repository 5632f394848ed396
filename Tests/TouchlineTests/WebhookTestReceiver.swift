import ChildProcesses
import Foundation
import TouchlineCore
import TouchlineTesting

/// A plain-HTTP webhook receiver on a real loopback socket and a real thread: it records every
/// request (head and body) and answers each with the status its script gives for that request
/// number, so tests can make it fail a few times and then recover.
///
/// The socket is bound at once but listens only after ``listen()``: until then connections are
/// refused, like a receiver that is down, and the port is already known and reserved.
final class WebhookTestReceiver: @unchecked Sendable {
    struct Request: Sendable {
        var head: String
        var body: [UInt8]
        var status: Int

        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return nil
        }
    }

    let port: Int
    private let fd: Int32
    private let script: @Sendable (Int) -> Int
    private let delay: Duration
    private let lock = NSLock()
    private var recorded: [Request] = []
    private var stopped = false

    /// `script(n)`: the status answered to request number `n` (0-based), `delay` after the
    /// request arrived (it is recorded on arrival).
    init(delay: Duration = .zero, script: @escaping @Sendable (Int) -> Int = { _ in 200 }) throws {
        self.script = script
        self.delay = delay
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw GatewayTestClient.Failure(description: "cannot bind the receiver") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    var url: String { "http://127.0.0.1:\(port)/hooks/touchline?source=test" }

    var requests: [Request] { lock.withLock { recorded } }

    /// A receiver already accepting: what almost every test wants.
    static func listening(delay: Duration = .zero, script: @escaping @Sendable (Int) -> Int = { _ in 200 }) throws -> WebhookTestReceiver {
        let receiver = try WebhookTestReceiver(delay: delay, script: script)
        receiver.listen()
        return receiver
    }

    /// Starts accepting, on a thread of its own.
    func listen() {
        _ = Glibc.listen(fd, 16)
        Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                serve(client)
            }
        }.start()
    }

    func stop() {
        lock.withLock { stopped = true }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        var bodyLength = 0
        while headEnd.map({ bytes.count < $0 + bodyLength }) ?? true {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            bytes += buffer[..<count]
            if headEnd == nil, let range = Self.headEnd(bytes) {
                headEnd = range
                let head = String(decoding: bytes[..<range], as: UTF8.self)
                bodyLength = Request(head: head, body: [], status: 0).header("Content-Length").flatMap(Int.init) ?? 0
            }
        }
        guard let end = headEnd else { return }
        let status = lock.withLock { script(recorded.count) }
        let request = Request(head: String(decoding: bytes[..<(end - 4)], as: UTF8.self), body: Array(bytes[end..<(end + bodyLength)]),
                              status: status)
        lock.withLock { recorded.append(request) }
        if delay > .zero { Thread.sleep(forTimeInterval: delay.inSeconds) }
        let answer = Array("HTTP/1.1 \(status) Whatever\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
        _ = answer.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Where the body starts: just past the head's blank line (nil: the head is not complete).
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }
}

/// HMAC-SHA256 in hex computed by the `openssl` command, independently of the gateway's code.
func opensslHMAC(key: String, message: [UInt8]) throws -> String {
    let text = try ChildProcess.run("openssl", ["dgst", "-sha256", "-hmac", key, "-r"], input: .bytes(Data(message)), errors: .null).output
    return text.split(separator: " ").first.map(String.init) ?? ""
}
