/// Why a JSON text was rejected, with the byte offset of the offending input, so a provider
/// can find the mistake in the body it sent: "expected ',' or '}' at byte 17".
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Zero-based offset of the byte where parsing stopped (the input length for a truncated text).
    public var offset: Int
    /// What was wrong, without the offset.
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser into `JSONValue`, hand-written over bytes because it sits on the
/// ingest path (tens of thousands of provider events per second).
///
/// Strict means: one value with optional surrounding whitespace, no trailing commas, no
/// comments, no leading zeros, no control characters inside strings, valid UTF-8, paired
/// surrogate escapes. Beyond the RFC, it rejects duplicate member names (the RFC leaves their
/// meaning undefined) and nesting deeper than `maximumDepth` (to bound the recursion).
///
/// Object members keep their order. A number without fraction or exponent that fits in
/// `Int64` becomes `.integer`; every other number becomes `.number`.
public struct JSONParser {
    public static let defaultMaximumDepth = 64

    /// Parses one JSON text.
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = defaultMaximumDepth) throws(JSONParseError) -> JSONValue {
        // `withUnsafeBytes` cannot forward a typed error, so the result travels as a `Result`.
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONParseError) in try parse(buffer, maximumDepth: maximumDepth) }
        }
        return try result.get()
    }

    /// Parses one JSON text from memory the caller keeps alive for the duration of the call.
    public static func parse(_ buffer: UnsafeRawBufferPointer, maximumDepth: Int = defaultMaximumDepth) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(buffer: buffer, maximumDepth: maximumDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index < buffer.count { throw parser.error("unexpected content after the JSON value") }
        return value
    }

    private let buffer: UnsafeRawBufferPointer
    private let maximumDepth: Int
    private var index = 0
    /// Reused between strings that contain escapes.
    private var scratch: [UInt8] = []

    private init(buffer: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.buffer = buffer
        self.maximumDepth = maximumDepth
    }

    // MARK: Values

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < buffer.count else { throw error(expected: "a value") }
        switch buffer[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error(expected: "a value")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        try checkDepth(depth)
        index += 1
        var members: [JSONValue.Member] = []
        var names: Set<JSONMemberName>? = nil
        skipWhitespace()
        if peek(UInt8(ascii: "}")) { index += 1; return .object(members) }
        while true {
            guard peek(UInt8(ascii: "\"")) else { throw error(expected: "a string member name") }
            let nameOffset = index
            let name = try parseString()
            if isDuplicate(name, in: members, seen: &names) {
                throw JSONParseError(offset: nameOffset, message: "duplicate member name \"\(name)\"")
            }
            skipWhitespace()
            guard peek(UInt8(ascii: ":")) else { throw error(expected: "':'") }
            index += 1
            skipWhitespace()
            members.append(JSONValue.Member(name, try parseValue(depth: depth)))
            skipWhitespace()
            if peek(UInt8(ascii: ",")) {
                index += 1
                skipWhitespace()
            } else if peek(UInt8(ascii: "}")) {
                index += 1
                return .object(members)
            } else {
                throw error(expected: "',' or '}'")
            }
        }
    }

    /// Small objects are searched linearly; past 16 members a set of names takes over. Names
    /// compare by code units (``JSONMemberName``), as RFC 8259 does.
    private func isDuplicate(_ name: String, in members: [JSONValue.Member], seen names: inout Set<JSONMemberName>?) -> Bool {
        if names == nil, members.count < 16 { return members.contains { $0.isNamed(name) } }
        if names == nil { names = Set(members.map { JSONMemberName($0.name) }) }
        return !names!.insert(JSONMemberName(name)).inserted
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        try checkDepth(depth)
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek(UInt8(ascii: "]")) { index += 1; return .array(elements) }
        while true {
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            if peek(UInt8(ascii: ",")) {
                index += 1
                skipWhitespace()
            } else if peek(UInt8(ascii: "]")) {
                index += 1
                return .array(elements)
            } else {
                throw error(expected: "',' or ']'")
            }
        }
    }

    private func checkDepth(_ depth: Int) throws(JSONParseError) {
        if depth > maximumDepth { throw error("nesting deeper than \(maximumDepth) levels") }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let matches = literal.withUTF8Buffer { expected in
            guard buffer.count - start >= expected.count else { return false }
            for offset in 0..<expected.count where buffer[start + offset] != expected[offset] { return false }
            return true
        }
        guard matches else { throw error("invalid literal, expected '\(literal)'") }
        index += literal.utf8CodeUnitCount
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        let negative = peek(UInt8(ascii: "-"))
        if negative { index += 1 }
        guard index < buffer.count, isDigit(buffer[index]) else { throw error(expected: "a digit") }
        if buffer[index] == UInt8(ascii: "0"), index + 1 < buffer.count, isDigit(buffer[index + 1]) {
            throw error("leading zeros are not allowed in numbers")
        }
        // Accumulated negatively so that Int64.min fits.
        var magnitude: Int64 = 0
        var overflowed = false
        while index < buffer.count, isDigit(buffer[index]) {
            let digit = Int64(buffer[index] &- UInt8(ascii: "0"))
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.subtractingReportingOverflow(digit)
            overflowed = overflowed || o1 || o2
            magnitude = next
            index += 1
        }
        var integral = true
        if peek(UInt8(ascii: ".")) {
            integral = false
            index += 1
            try skipDigits()
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            integral = false
            index += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { index += 1 }
            try skipDigits()
        }
        if integral, !overflowed {
            if negative { return .integer(magnitude) }
            if magnitude != .min { return .integer(-magnitude) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw JSONParseError(offset: start, message: "number out of range")
        }
        return .number(number)
    }

    private mutating func skipDigits() throws(JSONParseError) {
        guard index < buffer.count, isDigit(buffer[index]) else { throw error(expected: "a digit") }
        while index < buffer.count, isDigit(buffer[index]) { index += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    // MARK: Strings

    /// Parses a string starting at its opening quote. Strings without escapes (the usual case)
    /// are decoded straight from the input.
    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        var ascii = true
        while index < buffer.count {
            let byte = buffer[index]
            if byte == UInt8(ascii: "\"") {
                let text = try decode(UnsafeRawBufferPointer(rebasing: buffer[start..<index]), ascii: ascii, offset: start)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
            if byte < 0x20 { throw error("unescaped control character in string") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        throw error("unterminated string")
    }

    /// The slow path: copies the string into `scratch`, resolving escapes as it goes.
    private mutating func parseEscapedString(from start: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start..<index]))
        while index < buffer.count {
            let byte = buffer[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                let text = scratch.withUnsafeBytes { String(validating: $0, as: UTF8.self) }
                guard let text else { throw JSONParseError(offset: start, message: "invalid UTF-8 in string") }
                return text
            case UInt8(ascii: "\\"):
                try appendEscape()
            case ..<0x20:
                throw error("unescaped control character in string")
            default:
                scratch.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func appendEscape() throws(JSONParseError) {
        let escapeStart = index
        index += 1
        guard index < buffer.count else { throw error("unterminated string") }
        let simple: UInt8
        switch buffer[index] {
        case UInt8(ascii: "\""): simple = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): simple = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): simple = UInt8(ascii: "/")
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            index += 1
            try appendUnicodeEscape(escapeStart: escapeStart)
            return
        default:
            throw JSONParseError(offset: escapeStart, message: "invalid escape sequence")
        }
        scratch.append(simple)
        index += 1
    }

    /// `\uXXXX`, with a high surrogate required to be followed by `\u` and a low surrogate.
    private mutating func appendUnicodeEscape(escapeStart: Int) throws(JSONParseError) {
        var scalar = UInt32(try readHex4(escapeStart: escapeStart))
        if (0xDC00...0xDFFF).contains(scalar) {
            throw JSONParseError(offset: escapeStart, message: "unpaired surrogate in \\u escape")
        }
        if (0xD800...0xDBFF).contains(scalar) {
            guard buffer.count - index >= 2, buffer[index] == UInt8(ascii: "\\"), buffer[index + 1] == UInt8(ascii: "u") else {
                throw JSONParseError(offset: escapeStart, message: "unpaired surrogate in \\u escape")
            }
            index += 2
            let low = UInt32(try readHex4(escapeStart: index - 2))
            guard (0xDC00...0xDFFF).contains(low) else {
                throw JSONParseError(offset: escapeStart, message: "unpaired surrogate in \\u escape")
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        scratch.append(contentsOf: Unicode.UTF8.encode(Unicode.Scalar(scalar)!)!)
    }

    private mutating func readHex4(escapeStart: Int) throws(JSONParseError) -> UInt16 {
        guard buffer.count - index >= 4 else { throw JSONParseError(offset: escapeStart, message: "invalid \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = buffer[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(offset: escapeStart, message: "invalid \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    private func decode(_ bytes: UnsafeRawBufferPointer, ascii: Bool, offset: Int) throws(JSONParseError) -> String {
        if ascii { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw JSONParseError(offset: offset, message: "invalid UTF-8 in string")
        }
        return text
    }

    // MARK: Helpers

    private mutating func skipWhitespace() {
        while index < buffer.count {
            switch buffer[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    private func peek(_ byte: UInt8) -> Bool { index < buffer.count && buffer[index] == byte }

    private func error(_ message: String) -> JSONParseError { JSONParseError(offset: index, message: message) }

    /// "expected X", or "unexpected end of input, expected X" when the text stops short.
    private func error(expected what: String) -> JSONParseError {
        error(index < buffer.count ? "expected \(what)" : "unexpected end of input, expected \(what)")
    }
}
