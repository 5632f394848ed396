import TouchlineCore

/// A registration as the user directory of a partitioned registry sees it: which user registered
/// which token, of what kind, when (docs/cluster.md, "The partitioned token registry"). It is
/// logged to the user's partition beside the registration itself, logged to the token's; the
/// user's partition decides there which of the user's tokens the newest one replaces.
public struct UserTokenNote: Sendable, Equatable {
    public var userID: String
    public var token: String
    public var kind: TokenKind
    /// The activity's channel of an update token; nil for push-to-start.
    public var channelID: String?
    public var app: String
    public var registeredAt: UnixTime

    public init(userID: String, token: String, kind: TokenKind, channelID: String?, app: String, registeredAt: UnixTime) {
        self.userID = userID
        self.token = token.lowercased()
        self.kind = kind
        self.channelID = channelID
        self.app = app
        self.registeredAt = registeredAt
    }

    /// The note of `record`'s registration; nil for a token registered without a user.
    public init?(of record: TokenRecord) {
        guard let userID = record.userID else { return nil }
        self.init(userID: userID, token: record.token, kind: record.kind, channelID: record.channelID, app: record.app,
                  registeredAt: record.registeredAt)
    }

    /// The tokens one of which a registration keeps active, as the whole registry's rule groups
    /// them (``TokenRows``): a user's update tokens of one channel, of any app (an activity's
    /// channel belongs to one app); a user's push-to-start tokens of one app.
    /// Stored in the directory's rows, so short: `u <channel>` or `s <app>`.
    public var group: String {
        switch kind {
        case .update: "u \(channelID ?? "")"
        case .pushToStart: "s \(app)"
        }
    }

    /// The note of a directory row: its group says the kind, and an update token's channel.
    init?(userID: String, token: String, group: String, app: String, registeredAt: UnixTime) {
        let (code, rest) = (group.prefix(2), String(group.dropFirst(2)))
        switch code {
        case "u ": self.init(userID: userID, token: token, kind: .update, channelID: rest, app: app, registeredAt: registeredAt)
        case "s ": self.init(userID: userID, token: token, kind: .pushToStart, channelID: nil, app: app, registeredAt: registeredAt)
        default: return nil
        }
    }
}

/// Which rules a file's copy of a registry applies (``StoreWriter/applyRegistryEntry(_:sequence:previous:rules:completion:)``).
public enum RegistryRules: Sendable, Equatable {
    /// The whole registry in one file (one gateway, or a cluster's copy per gateway): a
    /// registration deactivates the user's previous token itself; user notes are not for it.
    case whole
    /// One partition of a partitioned registry: registrations only write their token; the
    /// user's notes decide which tokens are replaced, in the user's partition.
    case partition
}

extension RegistryEntry {
    /// A list's registry operations as a partitioned registry logs them: by partition, in list
    /// order within each (docs/cluster.md, "The partitioned token registry"). A registration goes
    /// to its token's partition, and with a user its note to the user's; a deletion, a 410 and a
    /// replacement to their token's; a note to its user's.
    public static func partitioned(_ operations: [TokenOperation], by partitioning: TokenPartitioning) -> [Int: RegistryEntry] {
        var byPartition: [Int: [TokenOperation]] = [:]
        for operation in operations {
            guard let partition = home(of: operation, by: partitioning) else { continue }
            byPartition[partition, default: []].append(operation)
            if case .registerToken(let record) = operation, let note = UserTokenNote(of: record) {
                byPartition[partitioning.partition(ofUser: note.userID), default: []].append(.noteUserToken(note))
            }
        }
        return byPartition.compactMapValues(RegistryEntry.init)
    }

    /// The partition whose log takes `operation`; nil for what is not the registry's.
    public static func home(of operation: TokenOperation, by partitioning: TokenPartitioning) -> Int? {
        switch operation {
        case .registerToken(let record): partitioning.partition(ofToken: record.token)
        case .deleteToken(let token), .deactivateToken(let token, _, _): partitioning.partition(ofToken: token)
        case .supersedeToken(let replaced, _): partitioning.partition(ofToken: replaced.token)
        case .noteUserToken(let note): partitioning.partition(ofUser: note.userID)
        case .createJob, .advanceJob, .retargetScheduledJob, .scheduleRetry, .clearTarget, .deadLetter, .markReplayed, .recordStarts,
             .forgetStarts, .webhook, .rememberIdempotencyKey, .pruneIdempotencyKeys: nil
        }
    }
}
