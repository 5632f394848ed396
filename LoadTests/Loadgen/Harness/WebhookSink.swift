import Foundation
import Synchronization

/// A webhook receiver for the load tool on a loopback port: one that accepts connections and
/// never answers (each is held, read and dropped, until the gateway gives up on it), or one
/// that answers every request with a status at once. Each connection on a thread of its own
/// (the gateway opens at most its `maxConcurrentPerEndpoint` at a time).
final class WebhookSink: @unchecked Sendable {
    enum Behaviour: Sendable {
        case stall
        case answer(status: Int)
    }

    let port: Int
    private let listener: Int32
    private let behaviour: Behaviour
    private let accepted = Atomic<Int>(0)

    var url: String { "http://127.0.0.1:\(port)/hooks" }
    /// Connections accepted so far.
    var connections: Int { accepted.load(ordering: .relaxed) }

    init(_ behaviour: Behaviour) throws {
        self.behaviour = behaviour
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { throw LoadError("the webhook sink cannot listen: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                accepted.add(1, ordering: .relaxed)
                Thread { [self] in serve(client) }.start()
            }
        }.start()
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        TCPSocket.setReceiveTimeout(client, seconds: 60)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var received: [UInt8] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            guard case .answer(let status) = behaviour else { continue }
            received += buffer[..<count]
            // The gateway's requests are small and say Content-Length: answer once the head is in.
            guard received.count >= 4, (0...(received.count - 4)).contains(where: { received[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }) else {
                continue
            }
            try? TCPSocket.writeAll(client, Array("HTTP/1.1 \(status) Nope\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
    }
}
