import Foundation
import Synchronization
import TouchlineCore
import TouchlineRuntime

/// An `https://` webhook receiver on loopback: the runtime's TLS server side (no ALPN: an
/// HTTP/1.1 server) with the given certificate, on a loop of its own. It records each request
/// whose head and body arrived (so a client that refused its certificate leaves no record),
/// answers 200 and closes.
final class WebhookTLSTestReceiver: @unchecked Sendable {
    let port: Int
    private let loop: EventLoop
    private let listener: TCPListener
    private let recorded = Mutex<[WebhookTestReceiver.Request]>([])
    private let handshakes = Atomic<Int>(0)
    /// Open connections (loop-confined), kept alive until they close.
    private var connections: [ObjectIdentifier: Connection] = [:]

    init(certificateFile: String, privateKeyFile: String) throws {
        let context = try TLSContext.server(TLSConfiguration(certificateFile: certificateFile, privateKeyFile: privateKeyFile), negotiatingH2: false)
        let loop = EventLoop.start(name: "tls-receiver")
        self.loop = loop
        // The listener exists before `self` does; it finds the receiver through this box.
        let owner = Owner()
        listener = try loop.sync { try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { fd in owner.receiver?.accept(fd, context: context) } }
        port = listener.port
        owner.receiver = self
    }

    private final class Owner: @unchecked Sendable {
        weak var receiver: WebhookTLSTestReceiver?
    }

    func url(host: String = "localhost") -> String { "https://\(host):\(port)/tls-hooks" }

    var requests: [WebhookTestReceiver.Request] { recorded.withLock { $0 } }
    /// TLS handshakes that completed (a client that refuses the certificate completes none).
    var completedHandshakes: Int { handshakes.load(ordering: .relaxed) }

    func stop() {
        try? loop.sync { [self] in
            listener.close()
            for connection in connections.values { connection.stream?.close() }
            connections = [:]
        }
        loop.stopAndWait()
    }

    private func accept(_ fd: Int32, context: TLSContext) {
        let connection = Connection(receiver: self)
        connections[ObjectIdentifier(connection)] = connection
        connection.stream = TLSStream.accept(loop: loop, context: context, socket: fd, delegate: connection)
        if connection.stream == nil { connections[ObjectIdentifier(connection)] = nil }
    }

    /// One accepted connection: reads the head and `Content-Length` bytes of body, then answers.
    private final class Connection: TLSStreamDelegate {
        unowned let receiver: WebhookTLSTestReceiver
        var stream: TLSStream?
        var bytes: [UInt8] = []

        init(receiver: WebhookTLSTestReceiver) { self.receiver = receiver }

        func streamDidConnect(_ stream: TLSStream) { receiver.handshakes.add(1, ordering: .relaxed) }

        func stream(_ stream: TLSStream, didRead buffer: UnsafeRawBufferPointer) {
            bytes += buffer
            guard let end = WebhookTestReceiver.headEnd(bytes) else { return }
            let head = String(decoding: bytes[..<(end - 4)], as: UTF8.self)
            let length = WebhookTestReceiver.Request(head: head, body: [], status: 0).header("Content-Length").flatMap(Int.init) ?? 0
            guard bytes.count >= end + length else { return }
            receiver.recorded.withLock { $0.append(.init(head: head, body: Array(bytes[end..<(end + length)]), status: 200)) }
            Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8).withUnsafeBytes { stream.write($0) }
            stream.closeAfterFlush()
        }

        func streamDidDrain(_ stream: TLSStream) {}

        func stream(_ stream: TLSStream, didCloseWith error: TransportError) {
            receiver.connections[ObjectIdentifier(self)] = nil
        }
    }
}
