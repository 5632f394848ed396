import Foundation
import Glibc
import Synchronization

/// A TCP relay on loopback between clients and one server that a test can cut and mend, as a
/// network between them would fail and heal: cut, it relays nothing in either direction (the
/// bytes wait in the kernel's buffers, as behind a link that drops every packet) and leaves new
/// connections unanswered; mended, it relays again, what waited included. Each connection is
/// relayed by two threads with blocking I/O.
final class CuttableProxy: @unchecked Sendable {
    let port: Int
    private let targetPort: Int
    private let listener: Int32
    private let state = Mutex<(isCut: Bool, isClosed: Bool, sockets: [Int32])>((false, false, []))

    init(targetPort: Int) throws {
        self.targetPort = targetPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard listener >= 0, bound == 0, listen(listener, 64) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "the proxy cannot listen: errno \(errno)"])
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptConnections() }.start()
    }

    var url: String { "nats://127.0.0.1:\(port)" }

    func cut() { state.withLock { $0.isCut = true } }
    func mend() { state.withLock { $0.isCut = false } }

    /// Stops listening and closes every relayed connection.
    func close() {
        let sockets = state.withLock { state -> [Int32] in
            state.isClosed = true
            return state.sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private var isCut: Bool { state.withLock { $0.isCut } }
    private var isClosed: Bool { state.withLock { $0.isClosed } }

    private func acceptConnections() {
        while !isClosed {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { if isClosed { return } else { continue } }
            Thread { [self] in relay(client) }.start()
        }
    }

    /// Connects `client` to the server once the link is up, then relays both ways.
    private func relay(_ client: Int32) {
        while isCut, !isClosed { usleep(10_000) }
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: targetPort)
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0, !isClosed else {
            Glibc.close(client)
            Glibc.close(server)
            return
        }
        state.withLock { $0.sockets += [client, server] }
        let back = DispatchSemaphore(value: 0)
        Thread { [self] in
            pump(from: server, to: client)
            back.signal()
        }.start()
        pump(from: client, to: server)
        back.wait()
        state.withLock { $0.sockets.removeAll { $0 == client || $0 == server } }
        Glibc.close(client)
        Glibc.close(server)
    }

    /// Copies bytes until either side ends, reading nothing while the link is cut.
    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !isClosed {
            if isCut {
                usleep(10_000)
                continue
            }
            var ready = pollfd(fd: source, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 10) >= 0 else { break }
            guard ready.revents != 0 else { continue }
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { break }
            var sent = 0
            while sent < count {
                while isCut, !isClosed { usleep(10_000) }
                let written = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + sent, count - sent) }
                guard written > 0 else { return end(source, destination) }
                sent += written
            }
        }
        end(source, destination)
    }

    /// Ends both directions: the other direction's thread sees its read end too.
    private func end(_ first: Int32, _ second: Int32) {
        shutdown(first, Int32(SHUT_RDWR))
        shutdown(second, Int32(SHUT_RDWR))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
