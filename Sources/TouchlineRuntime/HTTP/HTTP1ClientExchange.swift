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
    /// Where the search for the head's end goes on in `received`, and where the head starts
    /// (after any interim 1xx heads).
    private var scanned = 0
    private var headStart = 0
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
        // An interim (1xx) head is skipped: the final answer follows it (all within the 16 KiB).
        while let end = Self.headEnd(in: received, from: scanned) {
            let outcome = Self.status(ofHead: received[headStart..<end])
            guard case .status(100..<200) = outcome else { return finish(outcome) }
            headStart = end + 4
            scanned = headStart
        }
        // Only the last three bytes can start a terminator that the next read completes: each
        // byte is looked at a bounded number of times, even when the answer trickles in.
        scanned = max(headStart, received.count - 3)
        if received.count > Self.maximumHeadBytes { finish(.failed("the answer's head is larger than \(Self.maximumHeadBytes) bytes")) }
    }

    public func streamDidDrain(_ stream: TLSStream) {}

    public func stream(_ stream: TLSStream, didCloseWith error: TransportError) {
        let closed: Outcome = received.isEmpty ? .failed("\(error)") : .failed("the connection closed before the answer's head ended")
        finish(Self.headEnd(in: received, from: scanned).map { Self.status(ofHead: received[headStart..<$0]) } ?? closed)
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
        headEnd(in: bytes, from: 0).map { status(ofHead: bytes[..<$0]) }
    }

    /// Where the blank line that ends a head starts (at or after `start`), nil without one.
    static func headEnd(in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= 4, start <= bytes.count - 4 else { return nil }
        return (start...(bytes.count - 4)).first { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 }
    }

    /// The status on the first line of `head` (without its blank line), or a failure.
    static func status(ofHead head: ArraySlice<UInt8>) -> Outcome {
        let line = head[..<(head.firstIndex(of: 13) ?? head.endIndex)]
        let parts = line.split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/1.".utf8)), parts[0].count == 8, parts[1].count == 3,
              parts[1].allSatisfy({ (48...57).contains($0) }), let code = Int(String(decoding: parts[1], as: UTF8.self)),
              (100...599).contains(code) else {
            return .failed("the answer does not start with an HTTP/1.x status line")
        }
        return .status(code)
    }
}
