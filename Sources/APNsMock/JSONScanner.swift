/// A strict JSON (RFC 8259) validator over raw bytes that lists object members as it goes.
///
/// The mock checks every payload and provider token, so this has to be fast and exact: one pass
/// checks the whole document (UTF-8, escapes, number grammar, nesting) and notes every object
/// member as byte ranges. Nothing is decoded into dictionaries and keys become strings only
/// when asked for.
struct JSONDocument {
    enum Kind: Equatable {
        case object, array, string, number, bool, null
    }

    /// A value's kind and where its text sits in the document.
    struct Value {
        var kind: Kind
        var range: Range<Int>
    }

    /// One `"key": value` of an object.
    struct Member {
        /// Start offset of the object the member belongs to.
        var parent: Int
        /// The key token, quotes included.
        var keyRange: Range<Int>
        var value: Value
    }

    /// Why a document is not JSON, with the byte offset, for diagnostics.
    struct SyntaxError: Error, CustomStringConvertible {
        var message: String
        var offset: Int
        var description: String { "\(message) at byte \(offset)" }
    }

    static let maxDepth = 64

    let bytes: [UInt8]
    let root: Value
    private let allMembers: [Member]

    /// Checks that `bytes` is exactly one JSON value (surrounding whitespace allowed).
    init(_ bytes: [UInt8]) throws(SyntaxError) {
        let parsed = bytes.withUnsafeBufferPointer { buffer -> Result<(Value, [Member]), SyntaxError> in
            var parser = JSONParser(bytes: buffer)
            do throws(SyntaxError) {
                parser.skipWhitespace()
                let root = try parser.value(depth: 0)
                parser.skipWhitespace()
                guard parser.index == buffer.count else { throw SyntaxError(message: "unexpected data after the JSON value", offset: parser.index) }
                return .success((root, parser.members))
            } catch {
                return .failure(error)
            }
        }
        (root, allMembers) = try parsed.get()
        self.bytes = bytes
    }

    /// The members of an object value, in document order (duplicates kept).
    func members(of object: Value) -> LazyFilterSequence<[Member]> {
        precondition(object.kind == .object)
        let start = object.range.lowerBound
        return allMembers.lazy.filter { $0.parent == start }
    }

    /// The decoded key of a member.
    func key(_ member: Member) -> String {
        JSONParser.decodeString(bytes, member.keyRange)
    }

    /// True when a member's key is `name` (compared as bytes when the key has no escapes).
    func keyEquals(_ member: Member, _ name: StaticString) -> Bool {
        let inner = (member.keyRange.lowerBound + 1)..<(member.keyRange.upperBound - 1)
        if inner.count == name.utf8CodeUnitCount, rawEquals(inner, name) { return true }
        // Only a key written with escapes can still match.
        return bytes[inner].contains(UInt8(ascii: "\\")) && key(member) == name.description
    }

    private func rawEquals(_ range: Range<Int>, _ text: StaticString) -> Bool {
        range.count == text.utf8CodeUnitCount
            && bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + range.lowerBound, text.utf8Start, range.count) == 0 }
    }

    /// The decoded text of a string value.
    func string(_ value: Value) -> String {
        precondition(value.kind == .string)
        return JSONParser.decodeString(bytes, value.range)
    }

    /// True when a string value's raw text (between the quotes, no escapes) equals `literal`.
    func stringEquals(_ value: Value, _ literal: StaticString) -> Bool {
        value.kind == .string && rawEquals((value.range.lowerBound + 1)..<(value.range.upperBound - 1), literal)
    }

    /// The kinds of an array's elements, in order (read again from the array's bytes: the first
    /// pass keeps object members only, which is all the hot paths ask for).
    func elementKinds(of array: Value) -> [Kind] {
        precondition(array.kind == .array)
        return bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(bytes: buffer)
            parser.index = array.range.lowerBound + 1
            var kinds: [Kind] = []
            parser.skipWhitespace()
            while parser.index < array.range.upperBound - 1, let element = try? parser.value(depth: 1) {
                kinds.append(element.kind)
                parser.skipWhitespace()
                if parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: ",") { parser.index += 1 }
                parser.skipWhitespace()
            }
            return kinds
        }
    }

    /// The value of an integer number (no fraction or exponent) that fits in 64 bits.
    func integer(_ value: Value) -> Int64? {
        guard value.kind == .number else { return nil }
        var result: Int64 = 0
        var negative = false
        for i in value.range {
            let c = bytes[i]
            if c == UInt8(ascii: "-") { negative = true; continue }
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            let (m, o1) = result.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(Int64(c - UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            result = a
        }
        return negative ? -result : result
    }
}

private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var members: [JSONDocument.Member] = []

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        members.reserveCapacity(32)
    }

    private func fail(_ message: String) -> JSONDocument.SyntaxError {
        JSONDocument.SyntaxError(message: message, offset: index)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Parses one value at `index`.
    mutating func value(depth: Int) throws(JSONDocument.SyntaxError) -> JSONDocument.Value {
        guard index < bytes.count else { throw fail("unexpected end of JSON") }
        let start = index
        let kind: JSONDocument.Kind
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try object(depth: depth + 1)
            kind = .object
        case UInt8(ascii: "["):
            try array(depth: depth + 1)
            kind = .array
        case UInt8(ascii: "\""):
            try string()
            kind = .string
        case UInt8(ascii: "t"):
            try literal("true")
            kind = .bool
        case UInt8(ascii: "f"):
            try literal("false")
            kind = .bool
        case UInt8(ascii: "n"):
            try literal("null")
            kind = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try number()
            kind = .number
        default:
            throw fail("unexpected character")
        }
        return JSONDocument.Value(kind: kind, range: start..<index)
    }

    private mutating func object(depth: Int) throws(JSONDocument.SyntaxError) {
        guard depth <= JSONDocument.maxDepth else { throw fail("JSON nested too deeply") }
        let objectStart = index
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return }
        while true {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected an object key") }
            let keyStart = index
            try string()
            let keyRange = keyStart..<index
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let member = try value(depth: depth)
            members.append(JSONDocument.Member(parent: objectStart, keyRange: keyRange, value: member))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
            index += 1
            return
        }
    }

    private mutating func array(depth: Int) throws(JSONDocument.SyntaxError) {
        guard depth <= JSONDocument.maxDepth else { throw fail("JSON nested too deeply") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return }
        while true {
            _ = try value(depth: depth)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
            index += 1
            return
        }
    }

    private mutating func literal(_ text: StaticString) throws(JSONDocument.SyntaxError) {
        let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        guard index + expected.count <= bytes.count,
              bytes[index..<index + expected.count].elementsEqual(expected) else { throw fail("invalid literal") }
        index += expected.count
    }

    private mutating func number() throws(JSONDocument.SyntaxError) {
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number fraction") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private func isHex(_ c: UInt8) -> Bool {
        isDigit(c) || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "f"))
    }

    /// Checks a string token: escapes, no raw control characters, well-formed UTF-8.
    private mutating func string() throws(JSONDocument.SyntaxError) {
        index += 1
        while index < bytes.count {
            let c = bytes[index]
            // Plain printable ASCII is by far the common case.
            if c >= 0x20, c < 0x80, c != UInt8(ascii: "\""), c != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            switch c {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { break }
                switch bytes[index] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 1
                case UInt8(ascii: "u"):
                    guard index + 4 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]), isHex(bytes[index + 3]),
                          isHex(bytes[index + 4]) else {
                        throw fail("invalid \\u escape")
                    }
                    index += 5
                default:
                    throw fail("invalid escape")
                }
            case 0x00..<0x20:
                throw fail("control character in string")
            case 0x80...:
                try utf8Sequence()
            default:
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    private mutating func utf8Sequence() throws(JSONDocument.SyntaxError) {
        let lead = bytes[index]
        let length: Int
        let minimum: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; minimum = 0x80
        case 0xE0...0xEF: length = 3; minimum = 0x800
        case 0xF0...0xF4: length = 4; minimum = 0x10000
        default: throw fail("invalid UTF-8")
        }
        guard index + length <= bytes.count else { throw fail("truncated UTF-8") }
        var scalar = UInt32(lead) & (0xFF >> UInt32(length + 1))
        for k in 1..<length {
            let c = bytes[index + k]
            guard c & 0xC0 == 0x80 else { throw fail("invalid UTF-8") }
            scalar = scalar << 6 | UInt32(c & 0x3F)
        }
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { throw fail("invalid UTF-8") }
        index += length
    }

    /// Decodes a validated string token (quotes included in `range`).
    static func decodeString(_ bytes: [UInt8], _ range: Range<Int>) -> String {
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        if !bytes[inner].contains(UInt8(ascii: "\\")) {
            return String(decoding: bytes[inner], as: UTF8.self)
        }
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        var i = inner.lowerBound
        func flush() {
            if !utf8.isEmpty {
                scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
                utf8.removeAll()
            }
        }
        func hex4(_ at: Int) -> UInt32 {
            var v: UInt32 = 0
            for k in 0..<4 {
                let c = bytes[at + k]
                v = v << 4 | UInt32(c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : (c | 0x20) - UInt8(ascii: "a") + 10)
            }
            return v
        }
        while i < inner.upperBound {
            let c = bytes[i]
            guard c == UInt8(ascii: "\\") else { utf8.append(c); i += 1; continue }
            flush()
            let e = bytes[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = hex4(i)
                i += 4
                if (0xD800...0xDBFF).contains(code), i + 6 <= inner.upperBound,
                   bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") {
                    let low = hex4(i + 2)
                    if (0xDC00...0xDFFF).contains(low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
                    }
                }
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            default: scalars.append(Unicode.Scalar(e))
            }
        }
        flush()
        return String(scalars)
    }
}

#if canImport(Glibc)
import Glibc
#endif
