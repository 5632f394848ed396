import TouchlineCore
import TouchlineStore

/// What one gateway asks a registry partition's owner over request-reply (``PartitionedRegistry``),
/// and the owner's answer, in the binary record layout of the logs.
enum RegistryPartitionRequest: Equatable {
    /// Log this entry (all of it the partition's).
    case write(RegistryEntry)
    /// The records of these tokens (all of them the partition's), those registered.
    case lookUp([String])
    /// The user directory's tokens of a user and app, newest first (the user's partition).
    case directory(userID: String, app: String, limit: Int)

    static let binaryVersion: UInt8 = 1

    var encoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.binaryVersion)
        switch self {
        case .write(let entry):
            writer.byte(1)
            writer.data(entry.binaryEncoded)
        case .lookUp(let tokens):
            writer.byte(2)
            writer.unsigned(UInt64(tokens.count))
            tokens.forEach { writer.string($0) }
        case .directory(let userID, let app, let limit):
            writer.byte(3)
            writer.string(userID)
            writer.string(app)
            writer.unsigned(UInt64(limit))
        }
        return writer.bytes
    }

    /// An unsigned number no larger than `limit`.
    static func bounded(_ reader: inout BinaryRecordReader, upTo limit: Int) throws(BinaryRecordReader.Damaged) -> Int {
        let value = try reader.unsigned()
        guard value <= UInt64(limit) else { throw reader.damaged("\(value) is more than \(limit)") }
        return Int(value)
    }

    init(decoding bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.binaryVersion, of: "registry partition request layout")
        switch try reader.byte() {
        case 1: self = .write(try RegistryEntry(binaryEncoded: try reader.data()))
        case 2:
            var tokens: [String] = []
            for _ in 0..<(try reader.count()) { tokens.append(try reader.string()) }
            self = .lookUp(tokens)
        case 3: self = .directory(userID: try reader.string(), app: try reader.string(), limit: try Self.bounded(&reader, upTo: 10_000))
        case let kind: throw reader.damaged("unknown registry partition request \(kind)")
        }
        guard reader.isAtEnd else { throw reader.damaged("bytes after the request") }
    }
}

/// An owner's answer: what was asked for, or why not (refused by the registry's rules, or failed
/// for its storage or its ownership: worth a retry).
enum RegistryPartitionAnswer: Equatable {
    case written(TokenWriteSummary)
    case records([TokenRecord])
    case tokens([String])
    case refused(String)
    case failed(String)

    init(_ result: Result<TokenWriteSummary, StoreError>) {
        switch result {
        case .success(let summary): self = .written(summary)
        case .failure(let error): self.init(error)
        }
    }

    init(_ error: StoreError) {
        switch error {
        case .database(let failure) where !error.isStorageFailure: self = .refused(failure.message)
        case .database(let failure): self = .failed(failure.message)
        default: self = .failed(error.description)
        }
    }

    var encoded: [UInt8] {
        var writer = BinaryRecordWriter()
        switch self {
        case .written(let summary):
            writer.byte(1)
            writer.unsigned(UInt64(summary.tokensDeactivated))
        case .records(let records):
            writer.byte(2)
            writer.unsigned(UInt64(records.count))
            for record in records { Self.write(record, to: &writer) }
        case .tokens(let tokens):
            writer.byte(3)
            writer.unsigned(UInt64(tokens.count))
            tokens.forEach { writer.string($0) }
        case .refused(let why):
            writer.byte(4)
            writer.string(why)
        case .failed(let why):
            writer.byte(5)
            writer.string(why)
        }
        return writer.bytes
    }

    init(decoding bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        switch try reader.byte() {
        case 1: self = .written(TokenWriteSummary(tokensDeactivated: try RegistryPartitionRequest.bounded(&reader, upTo: 1 << 40)))
        case 2:
            var records: [TokenRecord] = []
            for _ in 0..<(try reader.count()) { records.append(try Self.record(&reader)) }
            self = .records(records)
        case 3:
            var tokens: [String] = []
            for _ in 0..<(try reader.count()) { tokens.append(try reader.string()) }
            self = .tokens(tokens)
        case 4: self = .refused(try reader.string())
        case 5: self = .failed(try reader.string())
        case let kind: throw reader.damaged("unknown registry partition answer \(kind)")
        }
        guard reader.isAtEnd else { throw reader.damaged("bytes after the answer") }
    }

    /// The answer to a request for `partition`, as the asking gateway reports it.
    func error(partition: Int) -> StoreError? {
        switch self {
        case .refused(let why): .refused("registry partition \(partition)'s owner: \(why)")
        case .failed(let why): .storageFailure("registry partition \(partition)'s owner: \(why)")
        case .written, .records, .tokens: nil
        }
    }

    /// A record: its registration's fields, then its app and state.
    private static func write(_ record: TokenRecord, to writer: inout BinaryRecordWriter) {
        record.writeRegistration(to: &writer)
        writer.string(record.app)
        writer.byte(record.active ? 1 : 0)
        writer.optional(record.deactivatedAt) { $0.signed($1.nanoseconds) }
    }

    private static func record(_ reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) -> TokenRecord {
        var record = try TokenRecord(readingRegistration: &reader)
        record.app = try reader.string()
        record.active = try reader.byte() == 1
        record.deactivatedAt = try reader.optional { (reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) in
            UnixTime(nanoseconds: try reader.signed())
        }
        return record
    }
}
