/// The bounds the parser holds every request to.
public struct HTTP1ParserLimits: Sendable, Equatable {
    /// Request line plus header fields, the blank line (and any empty lines before the request
    /// line) included; more is refused with 431.
    public var maxHeadBytes: Int
    /// Header field lines per request; more is refused with 431.
    public var maxHeaderCount: Int
    /// The body after decoding; a `Content-Length` above it is refused with 413 before any body
    /// byte is read, a chunked body as soon as a chunk size would pass it.
    public var maxBodyBytes: Int
    /// One chunk-size line, extensions included; longer is refused with 400.
    public var maxChunkLineBytes: Int
    /// The trailer section of a chunked body (checked, then dropped); more is refused with 431.
    public var maxTrailerBytes: Int

    public init(maxHeadBytes: Int = 16 << 10, maxHeaderCount: Int = 100, maxBodyBytes: Int = 1 << 20,
                maxChunkLineBytes: Int = 1024, maxTrailerBytes: Int = 8 << 10) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }
}

/// A strict HTTP/1.1 request parser (RFC 9112): bytes in, events out, no I/O.
///
/// Feed it with ``next(_:)`` until it returns an event or has consumed everything: a request is
/// `.head`, then `.body` ranges, then `.end`; after `.end` it reads the next request (pipelining).
/// It stops after each `.head` and `.end`, so the caller can decide (admission, body budget,
/// `100 Continue`) before a body byte is consumed, and leaves a pipelined request unread until
/// the current one is answered. An `.error` is final: the caller answers it and closes.
///
/// Lines end in CRLF only (a bare LF or CR is refused); the head is bounded in size and field
/// count; the framing rules are in ``HTTP1HeadParser`` and ``HTTP1ChunkedDecoder``. It never
/// traps on any input, which ``outcomes(of:limits:)`` (the entry point for fuzzing) relies on.
public struct HTTP1RequestParser: Sendable {
    public enum Event: Sendable, Equatable {
        case head(HTTPRequestHead)
        /// Body bytes: this range of the input passed to ``next(_:)``.
        case body(Range<Int>)
        case end
        case error(HTTPError)
    }

    private enum State: Sendable {
        case head
        case lengthBody(remaining: UInt64)
        case chunkedBody(HTTP1ChunkedDecoder)
        case end
        case failed(HTTPError)
    }

    public let limits: HTTP1ParserLimits
    private var state = State.head
    /// The head read so far, without the empty lines before its request line.
    private var headBuffer: [UInt8] = []
    /// Head bytes seen, empty lines before the request line included.
    private var headBytes = 0
    /// Bytes of the current head line so far.
    private var lineLength = 0
    private var sawCR = false

    public init(limits: HTTP1ParserLimits = HTTP1ParserLimits()) {
        self.limits = limits
    }

    /// True while a head has begun (at least one byte) but is not complete: the time the server
    /// gives a head runs from here.
    public var isReadingHead: Bool {
        if case .head = state { return headBytes > 0 }
        return false
    }

    /// Consumes bytes from the front of `input`: the event they complete (nil when all of them
    /// were consumed without completing one) and how many bytes were consumed.
    public mutating func next(_ input: UnsafeRawBufferPointer) -> (event: Event?, consumed: Int) {
        switch state {
        case .failed(let error):
            return (.error(error), 0)
        case .end:
            state = .head
            return (.end, 0)
        case .head:
            return readHead(input)
        case .lengthBody(let remaining):
            guard !input.isEmpty else { return (nil, 0) }
            let count = Int(min(remaining, UInt64(input.count)))
            state = remaining == UInt64(count) ? .end : .lengthBody(remaining: remaining - UInt64(count))
            return (.body(0..<count), count)
        case .chunkedBody(var decoder):
            let (event, end) = decoder.next(input, from: 0)
            state = .chunkedBody(decoder)
            switch event {
            case .end?: state = .head
            case .error(let error)?: state = .failed(error)
            default: break
            }
            return (event, end)
        }
    }

    private mutating func readHead(_ input: UnsafeRawBufferPointer) -> (event: Event?, consumed: Int) {
        var index = 0
        while index < input.count {
            let byte = input[index]
            index += 1
            headBytes += 1
            guard headBytes <= limits.maxHeadBytes else {
                return fail(HTTPError(status: 431, code: "head_too_large",
                                            message: "the request head is over \(limits.maxHeadBytes) bytes"), index)
            }
            if sawCR {
                guard byte == HTTP1Grammar.lf else {
                    return fail(.badRequest("bare_carriage_return", "a CR in the request head is not followed by LF"), index)
                }
                sawCR = false
                if lineLength == 0 {
                    // An empty line before the request line is ignored (RFC 9112 §2.2); after it, it ends the head.
                    if headBuffer.isEmpty { continue }
                    return headComplete(index)
                }
                headBuffer.append(HTTP1Grammar.cr)
                headBuffer.append(HTTP1Grammar.lf)
                lineLength = 0
            } else if byte == HTTP1Grammar.cr {
                sawCR = true
            } else if byte == HTTP1Grammar.lf {
                return fail(.badRequest("bare_line_feed", "a line of the request head ends in LF without CR; lines must end in CRLF"), index)
            } else {
                headBuffer.append(byte)
                lineLength += 1
            }
        }
        return (nil, index)
    }

    private mutating func headComplete(_ consumed: Int) -> (event: Event?, consumed: Int) {
        let head: HTTPRequestHead
        do {
            head = try HTTP1HeadParser.parse(headBuffer, limits: limits)
        } catch {
            return fail(error, consumed)
        }
        headBuffer.removeAll(keepingCapacity: headBuffer.capacity <= 4096)
        headBytes = 0
        lineLength = 0
        switch head.framing {
        case .none, .length(0): state = .end
        case .length(let length): state = .lengthBody(remaining: length)
        case .chunked: state = .chunkedBody(HTTP1ChunkedDecoder(limits: limits))
        }
        return (.head(head), consumed)
    }

    private mutating func fail(_ error: HTTPError, _ consumed: Int) -> (event: Event?, consumed: Int) {
        state = .failed(error)
        headBuffer = []
        return (.error(error), consumed)
    }
}

extension HTTP1RequestParser {
    /// What a whole input amounts to, for tests and fuzzing: every event in order, body bytes
    /// copied out. Stops at the first error; never traps, whatever the bytes.
    public enum Outcome: Sendable, Equatable {
        case head(HTTPRequestHead)
        case body([UInt8])
        case end
        case error(HTTPError)
    }

    /// Parses all of `bytes` (a connection's whole input) and returns the outcomes in order;
    /// an incomplete last request simply yields no `.end`.
    public static func outcomes(of bytes: [UInt8], limits: HTTP1ParserLimits = HTTP1ParserLimits()) -> [Outcome] {
        var parser = HTTP1RequestParser(limits: limits)
        var outcomes: [Outcome] = []
        bytes.withUnsafeBytes { all in
            var offset = 0
            while true {
                let rest = UnsafeRawBufferPointer(rebasing: all[offset...])
                let (event, consumed) = parser.next(rest)
                offset += consumed
                switch event {
                case .head(let head)?: outcomes.append(.head(head))
                case .body(let range)?: outcomes.append(.body(Array(rest[range])))
                case .end?: outcomes.append(.end)
                case .error(let error)?:
                    outcomes.append(.error(error))
                    return
                case nil:
                    if offset == all.count { return }
                }
            }
        }
        return outcomes
    }
}
