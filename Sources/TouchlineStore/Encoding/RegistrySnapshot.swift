import TouchlineRuntime

/// A gateway's copy of the shared token registry at one registry log sequence, as bytes: every
/// row of the registry's tables (``tables(_:)``), column by column as SQLite stored it. A copy
/// restored from it holds exactly what applying the log up to that sequence gave, so the log
/// below it can be trimmed (docs/cluster.md, "Compacting the token registry").
///
/// Layout version 1: the version byte, the sequence, then per table its name, its column names
/// and its rows (each behind a `1` byte, a `0` after the last), each value behind a type tag.
/// A reader refuses a version, table or column list it does not know, naming it, rather than
/// restore a copy that differs from what the log built.
public struct RegistrySnapshot: Sendable, Equatable {
    static let binaryVersion: UInt8 = 1
    /// The registry's tables by `rules`, parents first: restored in this order, emptied in the
    /// reverse. A partition's copy holds its user directory and the replacements it decided and received.
    public static func tables(_ rules: RegistryRules) -> [String] {
        switch rules {
        case .whole: ["tokens", "token_follows"]
        case .partition: ["tokens", "token_follows", "user_tokens", "token_supersessions", "token_replacements"]
        }
    }

    /// The registry log sequence the copy had applied when it was read.
    public let sequence: UInt64
    public let bytes: [UInt8]

    public init(sequence: UInt64, bytes: [UInt8]) {
        self.sequence = sequence
        self.bytes = bytes
    }

    /// Reads the sequence a snapshot's bytes were taken at, and checks the layout's version.
    public init(binaryEncoded bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        sequence = try Self.header(&reader)
        self.bytes = bytes
    }

    /// Reads past the version and sequence; the sequence.
    static func header(_ reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) -> UInt64 {
        try reader.version(binaryVersion, of: "token registry snapshot layout")
        return try reader.unsigned()
    }

    /// Writes the header; the tables follow (``Tables``).
    static func writer(at sequence: UInt64) -> BinaryRecordWriter {
        var writer = BinaryRecordWriter()
        writer.byte(binaryVersion)
        writer.unsigned(sequence)
        return writer
    }
}

extension BinaryRecordWriter {
    /// A table's name and columns, before its rows.
    mutating func tableHeader(_ name: String, columns: [String]) {
        string(name)
        unsigned(UInt64(columns.count))
        for column in columns { string(column) }
    }

    /// One row, behind the byte that says another row follows.
    mutating func row(_ values: [SQLiteValue]) {
        byte(1)
        for value in values {
            switch value {
            case .null: byte(0)
            case .integer(let integer):
                byte(1)
                signed(integer)
            case .real(let real):
                byte(2)
                unsigned(real.bitPattern)
            case .text(let text):
                byte(3)
                string(text)
            case .blob(let blob):
                byte(4)
                data(blob)
            }
        }
    }

    mutating func endOfRows() { byte(0) }
}

extension BinaryRecordReader {
    /// A table's name and columns.
    mutating func tableHeader() throws(Damaged) -> (name: String, columns: [String]) {
        let name = try string()
        var columns: [String] = []
        for _ in 0..<(try count()) { columns.append(try string()) }
        return (name, columns)
    }

    /// The next row of `width` values, or nil after the table's last.
    mutating func row(width: Int) throws(Damaged) -> [SQLiteValue]? {
        switch try byte() {
        case 0: return nil
        case 1: break
        case let tag: throw damaged("row tag \(tag)")
        }
        var values: [SQLiteValue] = []
        values.reserveCapacity(width)
        for _ in 0..<width {
            switch try byte() {
            case 0: values.append(.null)
            case 1: values.append(.integer(try signed()))
            case 2: values.append(.real(Double(bitPattern: try unsigned())))
            case 3: values.append(.text(try string()))
            case 4: values.append(.blob(try data()))
            case let tag: throw damaged("value tag \(tag)")
            }
        }
        return values
    }
}
