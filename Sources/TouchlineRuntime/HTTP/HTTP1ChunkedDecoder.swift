/// Finds the chunks of a `Transfer-Encoding: chunked` body (RFC 9112 §7.1), strictly and within
/// bounds: a chunk size is 1 to 16 hex digits, a size line (extensions included) at most
/// ``HTTP1ParserLimits/maxChunkLineBytes``, the trailer section at most
/// ``HTTP1ParserLimits/maxTrailerBytes`` (trailer fields are checked like header fields, then
/// dropped), every line ends in CRLF, and the decoded body stops at the body limit with a 413 as
/// soon as a chunk size would pass it. Pure: bytes in, events out.
struct HTTP1ChunkedDecoder: Sendable {
    private enum State: Sendable {
        case sizeLine
        case data(remaining: UInt64)
        /// After a chunk's data: CR expected (false), then LF (true).
        case dataEnd(sawCR: Bool)
        case trailers
    }

    private let limits: HTTP1ParserLimits
    private var state = State.sizeLine
    /// Bytes of the body so far, after decoding.
    private(set) var decodedBytes: UInt64 = 0

    // The size line being read.
    private var digits = 0
    private var size: UInt64 = 0
    private var lineBytes = 0
    private var sawCR = false
    private var whitespaceAfterDigits = false
    private var inExtension = false

    // The trailer section.
    private var trailerLine: [UInt8] = []
    private var trailerBytes = 0

    init(limits: HTTP1ParserLimits) {
        self.limits = limits
    }

    /// Reads from `input[start...]`: the next event (body bytes as a range of `input`, the end of
    /// the body, an error) or nil when all of it was consumed without completing one, and where
    /// reading stopped.
    mutating func next(_ input: UnsafeRawBufferPointer, from start: Int) -> (event: HTTP1RequestParser.Event?, end: Int) {
        var index = start
        while index < input.count {
            switch state {
            case .data(let remaining):
                let count = Int(min(remaining, UInt64(input.count - index)))
                decodedBytes += UInt64(count)
                state = remaining == UInt64(count) ? .dataEnd(sawCR: false) : .data(remaining: remaining - UInt64(count))
                return (.body(index..<(index + count)), index + count)
            case .dataEnd(let sawCR):
                let byte = input[index]
                index += 1
                if !sawCR && byte == HTTP1Grammar.cr {
                    state = .dataEnd(sawCR: true)
                } else if sawCR && byte == HTTP1Grammar.lf {
                    state = .sizeLine
                } else {
                    return (.error(.badRequest("invalid_chunk", "a chunk's data is longer than its size, or not followed by CRLF")), index)
                }
            case .sizeLine:
                let byte = input[index]
                index += 1
                if let error = sizeLineByte(byte) { return (.error(error), index) }
            case .trailers:
                let byte = input[index]
                index += 1
                switch trailerByte(byte) {
                case .failure(let error): return (.error(error), index)
                case .success(true): return (.end, index)
                case .success(false): break
                }
            }
        }
        return (nil, index)
    }

    /// One byte of a chunk-size line: `1*16HEXDIG [ BWS ";" chunk-ext ] CRLF`.
    private mutating func sizeLineByte(_ byte: UInt8) -> HTTPError? {
        lineBytes += 1
        guard lineBytes <= limits.maxChunkLineBytes else {
            return .badRequest("chunk_line_too_long",
                               "a chunk-size line (with its extensions) is longer than \(limits.maxChunkLineBytes) bytes")
        }
        if sawCR {
            guard byte == HTTP1Grammar.lf else { return .badRequest("bare_carriage_return", "a CR in the chunked body is not followed by LF") }
            return sizeLineComplete()
        }
        if byte == HTTP1Grammar.cr {
            sawCR = true
        } else if byte == HTTP1Grammar.lf {
            return .badRequest("bare_line_feed", "a line of the chunked body ends in LF without CR; lines must end in CRLF")
        } else if inExtension {
            guard HTTP1Grammar.isFieldValueChar(byte) else {
                return .badRequest("invalid_chunk_extension", "a chunk extension contains a control character")
            }
        } else if let value = HTTP1Grammar.hexValue(byte), !whitespaceAfterDigits {
            digits += 1
            guard digits <= 16 else { return .badRequest("invalid_chunk_size", "a chunk size has more than 16 hex digits") }
            size = size << 4 | value
        } else if digits > 0 && HTTP1Grammar.isWhitespace(byte) {
            whitespaceAfterDigits = true
        } else if digits > 0 && byte == UInt8(ascii: ";") {
            inExtension = true
        } else {
            return .badRequest("invalid_chunk_size", "a chunk size must be hexadecimal digits, got \(quotedForMessage([byte]))")
        }
        return nil
    }

    private mutating func sizeLineComplete() -> HTTPError? {
        defer {
            digits = 0
            size = 0
            lineBytes = 0
            sawCR = false
            whitespaceAfterDigits = false
            inExtension = false
        }
        guard digits > 0 else { return .badRequest("invalid_chunk_size", "a chunk-size line has no size") }
        guard !whitespaceAfterDigits || inExtension else {
            return .badRequest("invalid_chunk_size", "a chunk size is followed by whitespace without an extension")
        }
        if size == 0 {
            state = .trailers
            return nil
        }
        guard size <= UInt64(limits.maxBodyBytes) && decodedBytes + size <= UInt64(limits.maxBodyBytes) else {
            return HTTPError(status: 413, code: "body_too_large",
                                   message: "the chunked request body is over the limit of \(limits.maxBodyBytes) bytes")
        }
        state = .data(remaining: size)
        return nil
    }

    /// One byte of the trailer section; true once its empty last line has ended.
    private mutating func trailerByte(_ byte: UInt8) -> Result<Bool, HTTPError> {
        trailerBytes += 1
        guard trailerBytes <= limits.maxTrailerBytes else {
            return .failure(HTTPError(status: 431, code: "trailers_too_large",
                                            message: "the chunked body's trailer section is over \(limits.maxTrailerBytes) bytes"))
        }
        if sawCR {
            guard byte == HTTP1Grammar.lf else { return .failure(.badRequest("bare_carriage_return", "a CR in the trailers is not followed by LF")) }
            sawCR = false
            if trailerLine.isEmpty { return .success(true) }
            do {
                _ = try HTTP1HeadParser.parseFieldLine(trailerLine[...])
            } catch {
                return .failure(.badRequest("invalid_trailer", "a trailer field is malformed: \(error.message)"))
            }
            trailerLine.removeAll(keepingCapacity: true)
        } else if byte == HTTP1Grammar.cr {
            sawCR = true
        } else if byte == HTTP1Grammar.lf {
            return .failure(.badRequest("bare_line_feed", "a trailer line ends in LF without CR; lines must end in CRLF"))
        } else {
            trailerLine.append(byte)
        }
        return .success(false)
    }
}
