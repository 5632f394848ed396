/// The bytes of a record a store keeps outside SQLite (a JetStream log entry, say): varint
/// integers, length-prefixed bytes and strings, one tag byte per optional. Compact, and simple
/// enough to decode defensively: stored bytes can be damaged or come from a later build.
public struct BinaryRecordWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    public mutating func unsigned(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Zigzag, so that small negative numbers stay short.
    public mutating func signed(_ value: Int64) {
        unsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func data(_ value: [UInt8]) {
        unsigned(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    public mutating func string(_ value: String) { data(Array(value.utf8)) }

    /// Bytes as they are, without their length: only as a record's last field, which runs to its end.
    public mutating func raw(_ value: [UInt8]) { bytes += value }

    public mutating func optional<Value>(_ value: Value?, _ write: (inout BinaryRecordWriter, Value) -> Void) {
        guard let value else { return byte(0) }
        byte(1)
        write(&self, value)
    }
}

/// Reads what ``BinaryRecordWriter`` wrote; every read checks the bounds and throws
/// ``BinaryRecordReader/Damaged`` instead of trapping.
public struct BinaryRecordReader: Sendable {
    public struct Damaged: Error, Sendable, Equatable, CustomStringConvertible {
        public let offset: Int
        public let problem: String
        public var description: String { "damaged record at byte \(offset): \(problem)" }
    }

    private let bytes: [UInt8]
    public private(set) var offset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { offset == bytes.count }

    public func damaged(_ problem: String) -> Damaged { Damaged(offset: offset, problem: problem) }

    public mutating func byte() throws(Damaged) -> UInt8 {
        guard offset < bytes.count else { throw damaged("ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Reads a record's leading version byte and refuses any but `known`: a reader never misreads
    /// a layout it does not know (a record of a later build, say), it names it.
    public mutating func version(_ known: UInt8, of layout: String) throws(Damaged) {
        let version = try byte()
        guard version == known else { throw damaged("\(layout) version \(version) is not known") }
    }

    public mutating func unsigned() throws(Damaged) -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 7) {
            let next = try byte()
            value |= UInt64(next & 0x7f) << UInt64(shift)
            if next < 0x80 {
                guard shift < 63 || next <= 1 else { throw damaged("integer too large") }
                return value
            }
        }
        throw damaged("integer too long")
    }

    public mutating func signed() throws(Damaged) -> Int64 {
        let zigzag = try unsigned()
        return Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
    }

    /// A count or length no larger than what is left (each element takes at least a byte).
    public mutating func count() throws(Damaged) -> Int {
        let value = try unsigned()
        guard value <= UInt64(bytes.count - offset) else { throw damaged("length \(value) beyond the end") }
        return Int(value)
    }

    public mutating func data() throws(Damaged) -> [UInt8] {
        let length = try count()
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }

    public mutating func string() throws(Damaged) -> String {
        let start = offset
        let raw = try data()
        guard let text = String(validating: raw, as: UTF8.self) else { throw Damaged(offset: start, problem: "text is not UTF-8") }
        return text
    }

    public mutating func int() throws(Damaged) -> Int {
        let value = try signed()
        guard let int = Int(exactly: value) else { throw damaged("integer out of range") }
        return int
    }

    public mutating func optional<Value>(_ read: (inout BinaryRecordReader) throws(Damaged) -> Value) throws(Damaged) -> Value? {
        switch try byte() {
        case 0: return nil
        case 1: return try read(&self)
        case let tag: throw damaged("optional tag \(tag)")
        }
    }
}
