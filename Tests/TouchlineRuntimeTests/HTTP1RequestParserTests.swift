import Testing
import TouchlineCore
import TouchlineRuntime

/// The outcomes of `text` parsed in one piece, consecutive body pieces joined.
private func parse(_ text: String, limits: HTTP1ParserLimits = HTTP1ParserLimits()) -> [HTTP1RequestParser.Outcome] {
    joined(HTTP1RequestParser.outcomes(of: Array(text.utf8), limits: limits))
}

/// The same input fed one byte at a time, to check that where reads split never matters.
private func parseBytewise(_ bytes: [UInt8], limits: HTTP1ParserLimits = HTTP1ParserLimits()) -> [HTTP1RequestParser.Outcome] {
    var parser = HTTP1RequestParser(limits: limits)
    var outcomes: [HTTP1RequestParser.Outcome] = []
    var index = 0
    while true {
        let piece = index < bytes.count ? [bytes[index]] : []
        let (event, consumed) = piece.withUnsafeBytes { parser.next($0) }
        switch event {
        case .head(let head)?: outcomes.append(.head(head))
        case .body(let range)?: outcomes.append(.body(Array(piece[range])))
        case .end?: outcomes.append(.end)
        case .error(let error)?: return joined(outcomes + [.error(error)])
        case nil: break
        }
        index += consumed
        if event == nil && index >= bytes.count { return joined(outcomes) }
    }
}

private func joined(_ outcomes: [HTTP1RequestParser.Outcome]) -> [HTTP1RequestParser.Outcome] {
    var result: [HTTP1RequestParser.Outcome] = []
    for outcome in outcomes {
        if case .body(let more) = outcome, case .body(let earlier)? = result.last {
            result[result.count - 1] = .body(earlier + more)
        } else {
            result.append(outcome)
        }
    }
    return result
}

/// The error the input ends in, if any.
private func refusal(_ text: String, limits: HTTP1ParserLimits = HTTP1ParserLimits()) -> HTTPError? {
    guard case .error(let error)? = parse(text, limits: limits).last else { return nil }
    return error
}

private func heads(_ outcomes: [HTTP1RequestParser.Outcome]) -> [HTTPRequestHead] {
    outcomes.compactMap { if case .head(let head) = $0 { head } else { nil } }
}

@Suite struct HTTP1RequestParserTests {
    @Test func aSimpleRequestAndItsFields() throws {
        let outcomes = parse("GET /v1/channels?limit=2 HTTP/1.1\r\nHost: gw\r\nX-Trace-Id:  t9 \r\nAccept: */*\r\n\r\n")
        #expect(outcomes.count == 2 && outcomes.last == .end)
        let head = try #require(heads(outcomes).first)
        #expect(head.method == "GET" && head.target == "/v1/channels?limit=2" && head.minorVersion == 1)
        #expect(head.header("x-trace-id") == "t9")
        #expect(head.fields.map(\.name) == ["Host", "X-Trace-Id", "Accept"])
        #expect(head.framing == .none && head.keepAlive && !head.expectsContinue && !head.hasBody)
    }

    @Test func bodiesByLengthAndPipelinedRequestsWhateverTheReadSizes() {
        let text = "POST /a HTTP/1.1\r\nHost: gw\r\nContent-Length: 11\r\n\r\nhello world"
            + "POST /b HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n"
            + "GET /c HTTP/1.1\r\nHost: gw\r\n\r\n"
        let outcomes = parse(text)
        #expect(heads(outcomes).map(\.target) == ["/a", "/b", "/c"])
        #expect(outcomes.filter { $0 == .body(Array("hello world".utf8)) }.count == 2)
        #expect(outcomes.filter { $0 == .end }.count == 3)
        #expect(parseBytewise(Array(text.utf8)) == outcomes)
    }

    @Test func emptyLinesBeforeTheRequestLineAreIgnored() {
        #expect(heads(parse("\r\n\r\nGET / HTTP/1.1\r\nHost: gw\r\n\r\n")).map(\.target) == ["/"])
    }

    @Test func anAbsoluteFormTargetIsReducedToItsPathAndQuery() {
        #expect(heads(parse("GET http://gw:8080/v1/x?y=1 HTTP/1.1\r\nHost: gw\r\n\r\n")).first?.target == "/v1/x?y=1")
        #expect(heads(parse("GET https://gw HTTP/1.1\r\nHost: gw\r\n\r\n")).first?.target == "/")
    }

    @Test func connectionPersistenceAndExpectContinue() {
        #expect(heads(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n")).first?.keepAlive == false)
        #expect(heads(parse("GET / HTTP/1.0\r\n\r\n")).first?.keepAlive == false)
        #expect(heads(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")).first?.keepAlive == true)
        #expect(heads(parse("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\nx")).first?.expectsContinue == true)
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\nContent-Length: 1\r\n\r\nx")?.status == 417)
    }

    // MARK: Content-Length

    @Test func twoContentLengthsAreRefusedWhetherTheyAgreeOrNot() {
        for values in [("5", "5"), ("5", "44")] {
            let error = refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(values.0)\r\nContent-Length: \(values.1)\r\n\r\nhello")
            #expect(error?.status == 400 && error?.code == "duplicate_content_length", "\(values)")
        }
    }

    @Test func aContentLengthListMustRepeatOneNumber() {
        #expect(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello").contains(.body(Array("hello".utf8))))
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\nhello")?.code == "invalid_content_length")
    }

    @Test func whitespaceBeforeTheColonIsRefusedNotIgnored() {
        let error = refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\nhello")
        #expect(error?.status == 400 && error?.code == "whitespace_before_colon")
        #expect(error?.message.contains("Content-Length") == true)
        #expect(refusal("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n")?.code == "whitespace_before_colon")
    }

    @Test func aContentLengthThatIsNotASizeIs400AndOneOverTheCapIs413() {
        let limits = HTTP1ParserLimits(maxBodyBytes: 1024)
        for value in ["-1", "+5", "0x10", "1 0", "", "5;", "99999999999999999999999", "18446744073709551616"] {
            let error = refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(value)\r\n\r\n", limits: limits)
            #expect(error?.status == 400 && error?.code == "invalid_content_length", "\(value): \(String(describing: error))")
        }
        for value in ["1025", "18446744073709551615"] {
            let error = refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(value)\r\n\r\n", limits: limits)
            #expect(error?.status == 413 && error?.code == "body_too_large", "\(value)")
        }
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n", limits: limits)?.message
            == "the request body is 2000 bytes; the limit is 1024 bytes")
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1024\r\n\r\n", limits: limits) == nil)
    }

    // MARK: Transfer-Encoding

    @Test func transferEncodingWithContentLengthIsRefused() {
        let error = refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(error?.status == 400 && error?.code == "conflicting_framing")
    }

    @Test func onlyChunkedOnceAndLastIsAccepted() {
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n")?.status == 400)
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n")?.status == 400)
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n")?.status == 400)
        let gzip = refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        #expect(gzip?.status == 501 && gzip?.code == "unsupported_transfer_encoding")
        #expect(refusal("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")?.code == "invalid_transfer_encoding")
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n") == nil)
    }

    @Test func chunkSizeGarbageIs400NotA413() {
        for garbage in ["zz", "-1", "0x5", " 5", "5 ", ";ext", "", "12345678901234567"] {
            let error = refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\(garbage)\r\nhello\r\n0\r\n\r\n")
            #expect(error?.status == 400 && error?.code == "invalid_chunk_size", "\(garbage): \(String(describing: error))")
        }
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello!\r\n0\r\n\r\n")?.code == "invalid_chunk")
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\u{1}\r\nhello\r\n0\r\n\r\n")?.code
            == "invalid_chunk_extension")
    }

    @Test func aChunkedBodyIsCutAtTheCapAndItsFramingIsBounded() {
        let limits = HTTP1ParserLimits(maxBodyBytes: 8, maxChunkLineBytes: 64, maxTrailerBytes: 64)
        let over = parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n4\r\nmore\r\n0\r\n\r\n", limits: limits)
        #expect(over.contains(.body(Array("hello".utf8))))
        guard case .error(let error)? = over.last else { return #expect(Bool(false), "\(over)") }
        #expect(error.status == 413 && error.code == "body_too_large")
        // A huge size is refused from the size line, before any of its data.
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", limits: limits)?.status == 413)
        let longExtension = "1;" + String(repeating: "e", count: 80)
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\(longExtension)\r\nx\r\n0\r\n\r\n", limits: limits)?.code
            == "chunk_line_too_long")
        let trailers = (0..<10).map { "X-T\($0): value\r\n" }.joined()
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\(trailers)\r\n", limits: limits)?.status == 431)
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n")?.code == "invalid_trailer")
    }

    // MARK: Lines, fields, Host

    @Test func bareLineFeedsAndCarriageReturnsAreRefused() {
        for text in ["GET / HTTP/1.1\nHost: a\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\n\n",
                     "GET / HTTP/1.1\r\nHost: a\n\n"] {
            let error = refusal(text)
            #expect(error?.status == 400 && error?.code == "bare_line_feed", "\(text.debugDescription)")
        }
        #expect(refusal("GET / HTTP/1.1\rHost: a\r\n\r\n")?.code == "bare_carriage_return")
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")?.code == "bare_line_feed")
    }

    @Test func hostIsRequiredOnceInHTTP11() {
        #expect(refusal("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n")?.code == "missing_host")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")?.code == "duplicate_host")
        #expect(refusal("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n")?.code == "duplicate_host")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a b\r\n\r\n")?.code == "invalid_host")
        #expect(refusal("GET / HTTP/1.0\r\n\r\n") == nil)
        #expect(refusal("GET / HTTP/1.1\r\nhost: [::1]:8080\r\n\r\n") == nil)
    }

    /// Two credentials could be read as either one (a proxy checking the first, a route reading
    /// the last): refused like a second Host or Content-Length. Its message quotes neither.
    @Test func authorizationIsAcceptedOnceAtMost() throws {
        let twice = try #require(refusal("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer first-key\r\nauthorization: Bearer second-key\r\n\r\n"))
        #expect(twice.status == 400 && twice.code == "duplicate_authorization")
        #expect(!twice.message.contains("first-key") && !twice.message.contains("second-key"))
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\nAuthorization: Bearer k\r\n\r\n")?.code
            == "duplicate_authorization", "even the same value twice")
        #expect(heads(parse("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\n\r\n")).first?.header("authorization") == "Bearer k")
    }

    @Test func obsoleteLineFoldingAndControlCharactersAreRefused() {
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n two\r\n\r\n")?.code == "obsolete_line_folding")
        #expect(refusal("GET / HTTP/1.1\r\n Host: a\r\n\r\n")?.code == "obsolete_line_folding")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nX-Bad: a\u{0}b\r\n\r\n")?.code == "invalid_header")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nX-Bad: a\u{7f}\r\n\r\n")?.code == "invalid_header")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nX Y: z\r\n\r\n")?.code == "invalid_header")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nNo colon here\r\n\r\n")?.code == "invalid_header")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\n: empty name\r\n\r\n")?.code == "invalid_header")
        #expect(heads(parse("GET / HTTP/1.1\r\nHost: a\r\nX-Tab:\tv\tw\t\r\n\r\n")).first?.header("x-tab") == "v\tw")
    }

    @Test func malformedRequestLinesAndVersions() {
        for line in ["GET  / HTTP/1.1", "GET / HTTP/1.1 ", "GET /", "GET / HTTP/11", "GET / http/1.1", "G(T / HTTP/1.1", "GET x HTTP/1.1"] {
            let error = refusal("\(line)\r\nHost: a\r\n\r\n")
            #expect(error?.status == 400, "\(line): \(String(describing: error))")
        }
        #expect(refusal("GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n")?.code == "invalid_target")
        // The asterisk form is for OPTIONS alone (the server then answers 501); never a path.
        for method in ["GET", "POST", "DELETE"] {
            #expect(refusal("\(method) * HTTP/1.1\r\nHost: a\r\n\r\n")?.code == "invalid_target", "\(method) *")
        }
        #expect(heads(parse("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")).first?.target == "*")
        #expect(refusal("GET / HTTP/2.0\r\nHost: a\r\n\r\n")?.status == 505)
        #expect(heads(parse("GET / HTTP/1.9\r\nHost: a\r\n\r\n")).first?.minorVersion == 1)
    }

    @Test func anOversizedHeadIs431() {
        let limits = HTTP1ParserLimits(maxHeadBytes: 256, maxHeaderCount: 4)
        let long = refusal("GET / HTTP/1.1\r\nHost: a\r\nX-Pad: \(String(repeating: "p", count: 300))\r\n\r\n", limits: limits)
        #expect(long?.status == 431 && long?.code == "head_too_large")
        // Refused once the limit is passed, without waiting for the end of the head.
        #expect(refusal("GET /\(String(repeating: "a", count: 300))", limits: limits)?.status == 431)
        let many = refusal("GET / HTTP/1.1\r\nHost: a\r\n" + (0..<5).map { "X-\($0): v\r\n" }.joined() + "\r\n", limits: limits)
        #expect(many?.status == 431 && many?.code == "too_many_headers")
    }

    // MARK: Smuggling

    @Test func aRequestHiddenInABodyIsNeverParsedAsARequest() {
        let hidden = "GET /admin HTTP/1.1\r\nHost: a\r\n\r\n"
        let attempts = [
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: \(hidden.utf8.count)\r\n\r\n\(hidden)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length : 0\r\nContent-Length: \(hidden.utf8.count)\r\n\r\n\(hidden)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n\(hidden)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n\(hidden)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\nX: \(hidden)",
        ]
        for attempt in attempts {
            let outcomes = parse(attempt)
            #expect(heads(outcomes).count <= 1 && !heads(outcomes).contains { $0.target == "/admin" }, "\(attempt.debugDescription)")
            guard case .error? = outcomes.last else { return #expect(Bool(false), "not refused: \(attempt.debugDescription)") }
        }
    }

    // MARK: Any bytes

    @Test func arbitraryBytesNeverTrapAndReadSizesNeverMatter() {
        var random = SplitMix64(seed: 0x5eed)
        let alphabet = Array("GET POST / HTTP/1.1\r\n:Host: a; Content-Length: 5 Transfer-Encoding chunked 0 f\t\u{0}\u{7f}".utf8)
        let limits = HTTP1ParserLimits(maxHeadBytes: 512, maxHeaderCount: 8, maxBodyBytes: 64, maxChunkLineBytes: 32, maxTrailerBytes: 64)
        for round in 0..<400 {
            let count = Int(random.next() % 300)
            let bytes: [UInt8] = (0..<count).map { _ in
                round % 2 == 0 ? UInt8(truncatingIfNeeded: random.next()) : alphabet[Int(random.next() % UInt64(alphabet.count))]
            }
            let whole = joined(HTTP1RequestParser.outcomes(of: bytes, limits: limits))
            #expect(parseBytewise(bytes, limits: limits) == whole)
        }
    }
}
