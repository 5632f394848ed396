/// A JSON value for APNs payloads (`content-state`, `attributes`), written with keys in the
/// order given, so the same value always encodes to the same bytes.
///
/// `.raw` embeds JSON that is already encoded (a content-state rendered elsewhere) without
/// re-encoding it; its bytes are trusted to be valid JSON.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// A non-finite number has no JSON form and is written as `null`.
    case number(Double)
    case string(String)
    case array([JSONValue])
    /// Members in the order they are written.
    case object([Member])
    case raw([UInt8])

    public struct Member: Sendable, Equatable {
        public var name: String
        public var value: JSONValue
        public init(_ name: String, _ value: JSONValue) {
            self.name = name
            self.value = value
        }
    }

    /// The value encoded as JSON bytes.
    public var encoded: [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Keeps the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements.map { Member($0, $1) }) }
}

/// Appends compact JSON to a byte array. Commas are placed automatically: a value or key that
/// follows a completed value in the same container gets one.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma = false

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func openObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    mutating func closeObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }

    /// A member name known at compile time; it must need no escaping.
    mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A member name from data, escaped.
    mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    mutating func string(_ value: String) { separate(); appendQuoted(value); needsComma = true }

    mutating func integer(_ value: Int64) { separate(); bytes.append(contentsOf: String(value).utf8); needsComma = true }

    /// A member with an integer value, its name known at compile time.
    mutating func member(_ name: StaticString, _ value: Int64) {
        key(name)
        integer(value)
    }

    /// A member with an integer value, left out when there is none.
    mutating func member(_ name: StaticString, ifPresent value: Int64?) {
        guard let value else { return }
        member(name, value)
    }

    mutating func unsigned(_ value: UInt64) { separate(); bytes.append(contentsOf: String(value).utf8); needsComma = true }

    mutating func bool(_ value: Bool) { separate(); bytes.append(contentsOf: (value ? "true" : "false").utf8); needsComma = true }

    mutating func openArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    mutating func closeArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    /// Integral values print without a fraction (`100`, not `100.0`).
    mutating func number(_ value: Double) {
        separate()
        if !value.isFinite {
            bytes.append(contentsOf: "null".utf8)
        } else if value == value.rounded(), abs(value) < 1e15 {
            bytes.append(contentsOf: String(Int64(value)).utf8)
        } else {
            bytes.append(contentsOf: value.description.utf8)
        }
        needsComma = true
    }

    /// Bytes that already are JSON.
    mutating func raw(_ json: [UInt8]) { separate(); bytes.append(contentsOf: json); needsComma = true }

    mutating func value(_ value: JSONValue) {
        switch value {
        case .null: separate(); bytes.append(contentsOf: "null".utf8); needsComma = true
        case .bool(let flag): bool(flag)
        case .integer(let n): integer(n)
        case .number(let d): number(d)
        case .string(let s): string(s)
        case .raw(let json): raw(json)
        case .array(let elements):
            openArray()
            for element in elements { self.value(element) }
            closeArray()
        case .object(let members):
            openObject()
            for member in members {
                key(member.name)
                self.value(member.value)
            }
            closeObject()
        }
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Writes `"text"` escaping quote, backslash and control characters; other UTF-8 passes
    /// through. Runs that need no escaping are copied in bulk from the contiguous UTF-8.
    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                appendEscaped(byte)
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        default:
            bytes.append(contentsOf: "u00".utf8)
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 15)])
        }
    }
}
