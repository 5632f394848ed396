/// Turns a complete request head into an ``HTTPRequestHead``, strictly (RFC 9112 §3, §5, §6.3).
///
/// Input: the head's lines, each ending in CRLF, without the empty line that ends the head. The
/// caller (``HTTP1RequestParser``) has already refused bare CR and LF and bounded the size.
/// Anything this parser cannot read one way only is refused: a field a proxy in front of the
/// gateway might read differently is how request smuggling works.
enum HTTP1HeadParser {
    static func parse(_ head: [UInt8], limits: HTTP1ParserLimits) throws(HTTPError) -> HTTPRequestHead {
        var lines = splitLines(head)
        guard !lines.isEmpty else { throw .badRequest("malformed_request_line", "the request has no request line") }
        let requestLine = lines.removeFirst()
        var (method, target, minorVersion) = try parseRequestLine(requestLine)
        guard lines.count <= limits.maxHeaderCount else {
            throw HTTPError(status: 431, code: "too_many_headers",
                                  message: "the request has \(lines.count) header fields; the limit is \(limits.maxHeaderCount)")
        }
        var fields: [HTTPHeaderField] = []
        fields.reserveCapacity(lines.count)
        var semantics = FieldSemantics()
        for line in lines {
            let (name, value) = try parseFieldLine(line)
            try semantics.note(name: name, value: value)
            fields.append(HTTPHeaderField(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
        }
        if let absolute = originForm(ofAbsolute: target) { target = absolute }
        try semantics.checkHost(minorVersion: minorVersion)
        let framing = try semantics.framing(minorVersion: minorVersion, maxBodyBytes: limits.maxBodyBytes)
        return HTTPRequestHead(method: String(decoding: method, as: UTF8.self), target: String(decoding: target, as: UTF8.self),
                               minorVersion: minorVersion, fields: fields, framing: framing,
                               keepAlive: !semantics.connectionClose && (minorVersion == 1 || semantics.connectionKeepAlive),
                               expectsContinue: minorVersion == 1 && semantics.expectsContinue)
    }

    /// The lines of `head`, CRLF removed.
    private static func splitLines(_ head: [UInt8]) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = head.startIndex
        var index = head.startIndex
        while index < head.endIndex {
            if head[index] == HTTP1Grammar.cr {
                lines.append(head[start..<index])
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        return lines
    }

    /// `method SP request-target SP HTTP-version`, single spaces only.
    private static func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPError)
        -> (method: ArraySlice<UInt8>, target: ArraySlice<UInt8>, minorVersion: Int) {
        let malformed = HTTPError.badRequest("malformed_request_line",
                                                   "the request line must be METHOD SP target SP HTTP/1.1, separated by single spaces")
        let parts = line.split(separator: HTTP1Grammar.space, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else { throw malformed }
        guard parts[0].allSatisfy(HTTP1Grammar.isTokenChar) else {
            throw .badRequest("malformed_request_line", "the method contains a character that is not allowed in a token")
        }
        guard parts[1].allSatisfy(HTTP1Grammar.isTargetChar) else {
            throw .badRequest("invalid_target", "the request target contains a space, a control character or a non-ASCII byte")
        }
        let target = parts[1]
        // `*` (asterisk form) names the server itself and only means something to OPTIONS (RFC 9112
        // §3.2.4), which is not served: a `GET *` read as a path would reach a route.
        let isAsterisk = target.count == 1 && target.first == UInt8(ascii: "*")
        guard target.first == UInt8(ascii: "/") || (isAsterisk && parts[0].elementsEqual("OPTIONS".utf8))
                || originForm(ofAbsolute: target) != nil else {
            throw .badRequest("invalid_target", "the request target must be a path starting with / (or an absolute http URI)")
        }
        let version = Array(parts[2])
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)), version[6] == UInt8(ascii: "."),
              let major = digit(version[5]), let minor = digit(version[7]) else { throw malformed }
        guard major == 1 else {
            throw HTTPError(status: 505, code: "http_version_not_supported",
                                  message: "HTTP/\(major).\(minor) is not supported; send HTTP/1.1")
        }
        // A later 1.x is read as the highest minor version this server implements (RFC 9110 §2.5).
        return (parts[0], target, min(minor, 1))
    }

    private static func digit(_ byte: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int(byte - UInt8(ascii: "0")) : nil
    }

    /// The path and query of an absolute-form target (`http://host/path?q`), or nil when the
    /// target is not in absolute form.
    private static func originForm(ofAbsolute target: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let lowered = target.prefix(8).map(asciiLowercased)
        let schemeLength: Int
        if lowered.starts(with: Array("http://".utf8)) {
            schemeLength = 7
        } else if lowered.starts(with: Array("https://".utf8)) {
            schemeLength = 8
        } else {
            return nil
        }
        let authority = target.dropFirst(schemeLength)
        guard let end = authority.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) else {
            return Array("/".utf8)[...]
        }
        return authority[end] == UInt8(ascii: "/") ? authority[end...] : ArraySlice(Array("/".utf8) + authority[end...])
    }

    /// `field-name ":" OWS field-value OWS`: no whitespace before the colon, no obs-fold, a token
    /// for a name and no control character in the value.
    static func parseFieldLine(_ line: ArraySlice<UInt8>) throws(HTTPError)
        -> (name: ArraySlice<UInt8>, value: ArraySlice<UInt8>) {
        if let first = line.first, HTTP1Grammar.isWhitespace(first) {
            throw .badRequest("obsolete_line_folding",
                              "a header line starts with whitespace: obsolete line folding is not accepted; send each field on one line")
        }
        guard let colon = line.firstIndex(of: HTTP1Grammar.colon) else {
            throw .badRequest("invalid_header", "a header line has no colon")
        }
        let name = line[..<colon]
        guard !name.isEmpty else { throw .badRequest("invalid_header", "a header line has an empty field name") }
        if let last = name.last, HTTP1Grammar.isWhitespace(last) {
            let shown = quotedForMessage(HTTP1Grammar.trimmed(name))
            throw .badRequest("whitespace_before_colon", "the header \(shown) has whitespace between its name and the colon")
        }
        guard name.allSatisfy(HTTP1Grammar.isTokenChar) else {
            throw .badRequest("invalid_header", "the header name \(quotedForMessage(name)) contains a character that is not allowed")
        }
        let value = HTTP1Grammar.trimmed(line[(colon + 1)...])
        guard value.allSatisfy(HTTP1Grammar.isFieldValueChar) else {
            throw .badRequest("invalid_header", "the value of the header \(quotedForMessage(name)) contains a control character")
        }
        return (name, value)
    }
}

/// What the fields that frame the message and steer the connection say, gathered line by line.
private struct FieldSemantics {
    var hostCount = 0
    var hostValid = true
    var authorizationCount = 0
    var contentLengths: [ArraySlice<UInt8>] = []
    var transferCodings: [ArraySlice<UInt8>] = []
    var sawTransferEncoding = false
    var connectionClose = false
    var connectionKeepAlive = false
    var expectsContinue = false

    mutating func note(name: ArraySlice<UInt8>, value: ArraySlice<UInt8>) throws(HTTPError) {
        if HTTP1Grammar.equalsIgnoringCase(name, "host") {
            hostCount += 1
            hostValid = hostValid && value.allSatisfy(HTTP1Grammar.isHostChar)
        } else if HTTP1Grammar.equalsIgnoringCase(name, "authorization") {
            // Two credentials could be read as either one: by a proxy that checks the first and
            // a route that reads the last, or the other way round.
            authorizationCount += 1
            guard authorizationCount == 1 else {
                throw .badRequest("duplicate_authorization", "the request has more than one Authorization header; send exactly one")
            }
        } else if HTTP1Grammar.equalsIgnoringCase(name, "content-length") {
            contentLengths.append(value)
        } else if HTTP1Grammar.equalsIgnoringCase(name, "transfer-encoding") {
            sawTransferEncoding = true
            transferCodings += HTTP1Grammar.listElements(value)
        } else if HTTP1Grammar.equalsIgnoringCase(name, "connection") {
            for option in HTTP1Grammar.listElements(value) {
                if HTTP1Grammar.equalsIgnoringCase(option, "close") { connectionClose = true }
                if HTTP1Grammar.equalsIgnoringCase(option, "keep-alive") { connectionKeepAlive = true }
            }
        } else if HTTP1Grammar.equalsIgnoringCase(name, "expect") {
            guard HTTP1Grammar.equalsIgnoringCase(value, "100-continue") else {
                throw HTTPError(status: 417, code: "expectation_failed",
                                      message: "Expect \(quotedForMessage(value)) is not supported; only 100-continue is")
            }
            expectsContinue = true
        }
    }

    /// RFC 9112 §3.2: exactly one valid Host in HTTP/1.1, at most one in HTTP/1.0.
    func checkHost(minorVersion: Int) throws(HTTPError) {
        if hostCount > 1 {
            throw .badRequest("duplicate_host", "the request has \(hostCount) Host headers; send exactly one")
        }
        if hostCount == 0 && minorVersion == 1 {
            throw .badRequest("missing_host", "an HTTP/1.1 request must carry a Host header")
        }
        if !hostValid { throw .badRequest("invalid_host", "the Host header is not a valid host[:port]") }
    }

    /// RFC 9112 §6.1–6.3: one unambiguous way to find the body's end, or a refusal.
    func framing(minorVersion: Int, maxBodyBytes: Int) throws(HTTPError) -> HTTPBodyFraming {
        if sawTransferEncoding {
            guard contentLengths.isEmpty else {
                throw .badRequest("conflicting_framing", "the request has both Transfer-Encoding and Content-Length; send one of them")
            }
            guard minorVersion == 1 else {
                throw .badRequest("invalid_transfer_encoding", "Transfer-Encoding is not allowed in an HTTP/1.0 request")
            }
            return try transferFraming()
        }
        guard !contentLengths.isEmpty else { return .none }
        guard contentLengths.count == 1 else {
            throw .badRequest("duplicate_content_length", "the request has \(contentLengths.count) Content-Length headers; send exactly one")
        }
        let length = try contentLength(contentLengths[0])
        guard length <= UInt64(maxBodyBytes) else {
            throw HTTPError(status: 413, code: "body_too_large",
                                  message: "the request body is \(length) bytes; the limit is \(maxBodyBytes) bytes")
        }
        return .length(length)
    }

    private func transferFraming() throws(HTTPError) -> HTTPBodyFraming {
        guard let last = transferCodings.last else {
            throw .badRequest("invalid_transfer_encoding", "the Transfer-Encoding header is empty")
        }
        guard HTTP1Grammar.equalsIgnoringCase(last, "chunked") else {
            throw .badRequest("invalid_transfer_encoding",
                              "Transfer-Encoding must end with chunked (got \(quotedForMessage(last))): the body's end cannot be found otherwise")
        }
        let chunkedCount = transferCodings.filter { HTTP1Grammar.equalsIgnoringCase($0, "chunked") }.count
        guard chunkedCount == 1 else {
            throw .badRequest("invalid_transfer_encoding", "chunked is applied \(chunkedCount) times in Transfer-Encoding; send it once")
        }
        guard transferCodings.count == 1 else {
            throw HTTPError(status: 501, code: "unsupported_transfer_encoding",
                                  message: "only Transfer-Encoding: chunked is supported, got \(quotedForMessage(transferCodings[0]))")
        }
        return .chunked
    }

    /// Digits only; a list is accepted only when every element is the same number (RFC 9110 §8.6).
    private func contentLength(_ value: ArraySlice<UInt8>) throws(HTTPError) -> UInt64 {
        let elements = value.split(separator: HTTP1Grammar.comma, omittingEmptySubsequences: false).map(HTTP1Grammar.trimmed)
        var result: UInt64?
        for element in elements {
            guard !element.isEmpty, element.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw .badRequest("invalid_content_length", "Content-Length \(quotedForMessage(value)) is not a number of bytes (digits only)")
            }
            var number: UInt64 = 0
            for digit in element {
                let (times10, overflow1) = number.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
                guard !overflow1 && !overflow2 else {
                    throw .badRequest("invalid_content_length", "Content-Length \(quotedForMessage(value)) is too large to be a size")
                }
                number = sum
            }
            if let result, result != number {
                throw .badRequest("invalid_content_length", "Content-Length \(quotedForMessage(value)) lists different sizes")
            }
            result = number
        }
        return result!
    }
}
