import TouchlineRuntime

/// The HTTP/1.1 request parser on any bytes, as a connection's whole input: it never traps;
/// fed in small pieces (as a slow client sends) it gives what it gives fed at once; and what it
/// accepts keeps the framing rules: one way of delimiting the body, a `Host` on HTTP/1.1, no
/// body over the limit, bounded heads.
enum HTTPRequestHeadTarget {
    /// Small limits, so the fuzzer reaches every refusal quickly.
    static let limits = HTTP1ParserLimits(maxHeadBytes: 1024, maxHeaderCount: 16, maxBodyBytes: 4096, maxChunkLineBytes: 64,
                                          maxTrailerBytes: 256)

    static func run(_ bytes: [UInt8]) {
        let whole = normalized(HTTP1RequestParser.outcomes(of: bytes, limits: limits))
        let piece = 1 + Int(bytes.first ?? 0) % 7
        require(normalized(inPieces(bytes, of: piece)) == whole, "fed \(piece) bytes at a time the parser read something else")
        var bodyBytes = 0
        for outcome in whole {
            switch outcome {
            case .head(let head):
                let lengths = head.fields.filter { $0.name.lowercased() == "content-length" }
                let encodings = head.fields.filter { $0.name.lowercased() == "transfer-encoding" }
                require(lengths.isEmpty || encodings.isEmpty, "a request with both Content-Length and Transfer-Encoding was accepted")
                require(lengths.count <= 1, "a request with two Content-Length fields was accepted")
                require(head.minorVersion == 0 || head.fields.count(where: { $0.name.lowercased() == "host" }) == 1,
                        "an HTTP/1.1 request without exactly one Host was accepted")
                require(head.fields.count <= limits.maxHeaderCount, "more header fields than the limit were accepted")
                bodyBytes = 0
            case .body(let chunk):
                bodyBytes += chunk.count
                require(bodyBytes <= limits.maxBodyBytes, "a body over the limit was read")
            case .end, .error:
                break
            }
        }
    }

    /// The input handed over a few bytes at a time, as a connection buffers what has arrived.
    static func inPieces(_ bytes: [UInt8], of size: Int) -> [HTTP1RequestParser.Outcome] {
        var parser = HTTP1RequestParser(limits: limits)
        var pending: [UInt8] = []
        var outcomes: [HTTP1RequestParser.Outcome] = []
        var next = 0
        while true {
            let event: HTTP1RequestParser.Event?
            let consumed: Int
            (event, consumed) = pending.withUnsafeBytes { parser.next($0) }
            switch event {
            case .head(let head)?: outcomes.append(.head(head))
            case .body(let range)?: outcomes.append(.body(Array(pending[range])))
            case .end?: outcomes.append(.end)
            case .error(let error)?: outcomes.append(.error(error)); return outcomes
            case nil: break
            }
            pending.removeFirst(consumed)
            if event == nil {
                guard next < bytes.count else { return outcomes }
                pending += bytes[next..<min(bytes.count, next + size)]
                next += size
            }
        }
    }

    /// Consecutive body pieces joined (how a body is cut into ranges depends on the reads).
    static func normalized(_ outcomes: [HTTP1RequestParser.Outcome]) -> [HTTP1RequestParser.Outcome] {
        var result: [HTTP1RequestParser.Outcome] = []
        for outcome in outcomes {
            if case .body(let more) = outcome, case .body(let earlier)? = result.last {
                result[result.count - 1] = .body(earlier + more)
            } else if case .body(let chunk) = outcome, chunk.isEmpty {
                continue
            } else {
                result.append(outcome)
            }
        }
        return result
    }
}
