import TouchlineCore

/// One HTTP/1.1 request on a connection of its own, answered with the response's status code:
/// the webhook delivery's client. Loop-confined.
///
/// Bounded in every way a receiver could abuse: one deadline for the whole exchange (connect,
/// TLS, write, answer), at most ``maximumHeadBytes`` of the answer read (the status line and
/// headers; the body is never read), and `Connection: close`, so nothing outlives the exchange.
/// The completion runs exactly once, on the loop.
public final class HTTP1ClientExchange: TLSStreamDelegate, @unchecked Sendable {
    /// What the exchange ended with.
    public enum Outcome: Sendable, Equatable {
        /// The receiver answered with this status.
        case status(Int)
        /// No usable answer: the connection failed, the answer was malformed or too large, or the deadline passed.
        case failed(String)
    }

    /// The most of the answer read before giving up on finding the end of its head.
    public static let maximumHeadBytes = 16 * 1024

    private let request: [UInt8]
    private var stream: TLSStream?
    private var deadline: LoopTimer?
    private var received: [UInt8] = []
    private var completion: ((Outcome) -> Void)?

    private init(request: [UInt8], completion: @escaping (Outcome) -> Void) {
        self.request = request
        self.completion = completion
    }

    /// Connects to `host:port` (TLS with `tls`, plain TCP without), sends `request` (the whole
    /// encoded request, which should say `Connection: close`) and reads the status.
    @discardableResult
    public static func start(loop: EventLoop, tls: TLSContext?, host: String, port: Int, request: [UInt8], timeout: Duration,
                             completion: @escaping (Outcome) -> Void) -> HTTP1ClientExchange {
        let exchange = HTTP1ClientExchange(request: request, completion: completion)
        let deadline = LoopTimer(loop: loop) { [exchange] in exchange.finish(.failed("no answer within \(timeout.inSeconds) s")) }
        exchange.deadline = deadline
        deadline.schedule(after: timeout)
        exchange.stream = TLSStream.connect(loop: loop, context: tls, host: host, port: port, connectTimeout: timeout, delegate: exchange)
        return exchange
    }

    public func streamDidConnect(_ stream: TLSStream) {
        request.withUnsafeBytes { stream.write($0) }
    }

    public func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) {
        guard completion != nil else { return }
        received.append(contentsOf: bytes.prefix(Self.maximumHeadBytes + 1 - received.count))
        if let status = Self.status(inHead: received) { return finish(status) }
        if received.count > Self.maximumHeadBytes { finish(.failed("the answer's head is larger than \(Self.maximumHeadBytes) bytes")) }
    }

    public func streamDidDrain(_ stream: TLSStream) {}

    public func stream(_ stream: TLSStream, didCloseWith error: TransportError) {
        finish(Self.status(inHead: received) ?? .failed(received.isEmpty ? "\(error)" : "the connection closed before the answer's head ended"))
    }

    private func finish(_ outcome: Outcome) {
        guard let completion else { return }
        self.completion = nil
        deadline?.cancel()
        deadline = nil
        let stream = self.stream
        self.stream = nil
        stream?.delegate = nil
        stream?.close()
        completion(outcome)
    }

    /// The status of a complete response head (`HTTP/1.x NNN ...` up to the blank line), a
    /// failure when the status line is malformed, nil while the head is incomplete.
    static func status(inHead bytes: [UInt8]) -> Outcome? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == terminator }) else {
            return nil
        }
        let line = bytes[..<(bytes[..<end].firstIndex(of: 13) ?? end)]
        let parts = line.split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/1.".utf8)), parts[0].count == 8, parts[1].count == 3,
              let code = Int(String(decoding: parts[1], as: UTF8.self)), (100...599).contains(code) else {
            return .failed("the answer does not start with an HTTP/1.x status line")
        }
        return .status(code)
    }
}
