import TouchlineRuntime

/// A copy of the token registry at one registry log sequence, as bytes, in one of two layouts
/// (``Layout``). A copy restored from it holds exactly what applying the log up to that sequence
/// gave, so the log below it can be trimmed (docs/cluster.md, "Compacting the token registry").
///
/// Both start with the layout's version byte and the sequence. A reader refuses a version, table
/// or column list it does not know, naming it, rather than restore a copy that differs from what
/// the log built.
public struct RegistrySnapshot: Sendable, Equatable {
    public enum Layout: UInt8, Sendable {
        /// Every row of the registry's tables (``tables(_:)``), column by column as SQLite stored
        /// them: per table its name, its column names and its rows (each behind a `1` byte, a `0`
        /// after the last), each value behind a type tag. The shared registry's copy, which shares
        /// its file with the gateway's jobs.
        case rows = 1
        /// A registry partition's whole file as SQLite's pages (``RegistryImageFile``, written and
        /// restored from a file, never held here): restored by copying pages, with its indexes,
        /// rather than inserting rows and building them (a takeover's largest cost with rows,
        /// docs/benchmarks.md).
        case fileImage = 2
    }

    /// The registry's tables by `rules`, parents first: restored in this order, emptied in the
    /// reverse. A partition's copy holds its user directory and the replacements it decided and received.
    public static func tables(_ rules: RegistryRules) -> [String] {
        switch rules {
        case .whole: ["tokens", "token_follows"]
        case .partition: ["tokens", "token_follows", "user_tokens", "token_supersessions", "token_replacements"]
        }
    }

    public let layout: Layout
    /// The registry log sequence the copy had applied when it was read.
    public let sequence: UInt64
    public let bytes: [UInt8]

    public init(layout: Layout, sequence: UInt64, bytes: [UInt8]) {
        self.layout = layout
        self.sequence = sequence
        self.bytes = bytes
    }

    /// Reads the layout and the sequence a snapshot's bytes were taken at.
    public init(binaryEncoded bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        (layout, sequence) = try Self.header(&reader)
        self.bytes = bytes
    }

    /// Reads past the layout's version and the sequence.
    static func header(_ reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) -> (Layout, UInt64) {
        let version = try reader.byte()
        guard let layout = Layout(rawValue: version) else {
            throw reader.damaged("token registry snapshot layout version \(version) (this build reads 1 and 2)")
        }
        return (layout, try reader.unsigned())
    }

    /// Writes the header; the tables or the image follow.
    static func writer(_ layout: Layout, at sequence: UInt64) -> BinaryRecordWriter {
        var writer = BinaryRecordWriter()
        writer.byte(layout.rawValue)
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
