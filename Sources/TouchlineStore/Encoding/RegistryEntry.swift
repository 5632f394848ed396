import TouchlineCore

/// The token-registry part of a list of ``TokenOperation``s, as one entry of a shared log: the
/// JetStream backend logs registrations, deactivations and deletions in order, and every
/// gateway applies the same entries in the same order to its own copy of the registry, so all
/// copies agree (docs/cluster.md, "The shared token registry").
///
/// Version 1 of the layout; a later layout takes a new version byte, and a reader refuses one it
/// does not know rather than misread it. A registration of another app than `default` is its
/// own operation (tag 4: tag 1's fields, then the app), so a `default` registration reads as
/// before and a reader that predates apps refuses another app's rather than take it for `default`.
/// A user's note (tag 5) and a replacement it decided (tag 6) are logged only to a partitioned
/// registry, which no older reader follows.
public struct RegistryEntry: Sendable, Equatable {
    static let binaryVersion: UInt8 = 1

    /// Registry operations only (``TokenOperation/isRegistryOperation``), in list order.
    public let operations: [TokenOperation]

    /// Nil when `operations` holds anything but registry operations: only those are shared.
    public init?(_ operations: [TokenOperation]) {
        guard operations.allSatisfy(\.isRegistryOperation) else { return nil }
        self.operations = operations
    }

    public var binaryEncoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.binaryVersion)
        writer.unsigned(UInt64(operations.count))
        for operation in operations {
            switch operation {
            case .registerToken(let record):
                writer.byte(record.app == AppChannelID.defaultApp ? 1 : 4)
                record.writeRegistration(to: &writer)
                if record.app != AppChannelID.defaultApp { writer.string(record.app) }
            case .deleteToken(let token):
                writer.byte(2)
                writer.string(token)
            case .deactivateToken(let token, let apnsTimestamp, let at):
                writer.byte(3)
                writer.string(token)
                writer.time(apnsTimestamp)
                writer.time(at)
            case .noteUserToken(let note):
                writer.byte(5)
                Self.write(note, to: &writer)
            case .supersedeToken(let replaced, let registeredBefore):
                writer.byte(6)
                Self.write(replaced, to: &writer)
                writer.time(registeredBefore)
            default:
                preconditionFailure("only registry operations are logged (checked by init)")
            }
        }
        return writer.bytes
    }

    public init(binaryEncoded bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.binaryVersion, of: "registry entry layout")
        let count = try reader.count()
        var operations: [TokenOperation] = []
        operations.reserveCapacity(count)
        for _ in 0..<count {
            switch try reader.byte() {
            case let tag where tag == 1 || tag == 4:
                var record = try TokenRecord(readingRegistration: &reader)
                if tag == 4 { record.app = try reader.string() }
                operations.append(.registerToken(record))
            case 2:
                operations.append(.deleteToken(try reader.string()))
            case 3:
                operations.append(.deactivateToken(try reader.string(), unlessRegisteredAfter: try reader.time(), at: try reader.time()))
            case 5:
                operations.append(.noteUserToken(try Self.note(&reader)))
            case 6:
                operations.append(.supersedeToken(try Self.note(&reader), registeredBefore: try reader.time()))
            case let tag:
                throw reader.damaged("unknown registry operation \(tag)")
            }
        }
        guard reader.isAtEnd else { throw reader.damaged("bytes after the last operation") }
        self.operations = operations
    }
}

extension TokenRecord {
    /// The fields a registration logs, in the registry entry layout (its app apart: the
    /// operation's tag says whether it follows).
    public func writeRegistration(to writer: inout BinaryRecordWriter) {
        writer.string(token)
        writer.string(kind.rawValue)
        writer.optional(channelID) { $0.string($1) }
        writer.optional(userID) { $0.string($1) }
        writer.unsigned(UInt64(follows.count))
        for follow in follows { writer.string(follow) }
        writer.string(environment.rawValue)
        writer.time(registeredAt)
    }

    /// A registration's fields as ``writeRegistration(to:)`` wrote them: an active token of the `default` app.
    public init(readingRegistration reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) {
        let token = try reader.string()
        guard let kind = TokenKind(rawValue: try reader.string()) else { throw reader.damaged("unknown token kind") }
        let channelID = try reader.optional { (reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) in try reader.string() }
        let userID = try reader.optional { (reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) in try reader.string() }
        var follows: [String] = []
        for _ in 0..<(try reader.count()) { follows.append(try reader.string()) }
        guard let environment = TokenEnvironment(rawValue: try reader.string()) else { throw reader.damaged("unknown token environment") }
        self.init(token: token, kind: kind, channelID: channelID, userID: userID, follows: follows, environment: environment,
                  registeredAt: try reader.time())
    }
}

extension RegistryEntry {
    private static func write(_ note: UserTokenNote, to writer: inout BinaryRecordWriter) {
        writer.string(note.userID)
        writer.string(note.token)
        writer.string(note.kind.rawValue)
        writer.optional(note.channelID) { $0.string($1) }
        writer.string(note.app)
        writer.time(note.registeredAt)
    }

    private static func note(_ reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) -> UserTokenNote {
        let userID = try reader.string(), token = try reader.string()
        guard let kind = TokenKind(rawValue: try reader.string()) else { throw reader.damaged("unknown token kind") }
        let channelID = try reader.optional { (reader: inout BinaryRecordReader) throws(BinaryRecordReader.Damaged) in try reader.string() }
        return UserTokenNote(userID: userID, token: token, kind: kind, channelID: channelID, app: try reader.string(), registeredAt: try reader.time())
    }
}

extension TokenOperation {
    /// Registrations, deactivations and deletions of tokens: what the shared registry holds. The
    /// rest (jobs, dead letters, idempotency keys, the outbox) stays with the gateway that runs it.
    public var isRegistryOperation: Bool {
        switch self {
        case .registerToken, .deleteToken, .deactivateToken, .noteUserToken, .supersedeToken: true
        case .createJob, .advanceJob, .retargetScheduledJob, .scheduleRetry, .clearTarget, .deadLetter, .markReplayed, .recordStarts,
             .forgetStarts, .webhook, .rememberIdempotencyKey, .pruneIdempotencyKeys: false
        }
    }
}
