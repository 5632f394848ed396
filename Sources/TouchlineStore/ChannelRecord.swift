import TouchlineCore

/// How a channel ended: the `dismissal-date` sent with `end`, and when the end was accepted.
public struct ChannelEnd: Sendable, Equatable {
    public var dismissAt: UnixTime?
    public var endedAt: UnixTime

    public init(dismissAt: UnixTime?, endedAt: UnixTime) {
        self.dismissAt = dismissAt
        self.endedAt = endedAt
    }
}

/// Everything the gateway keeps about one channel, enough to resume it after a restart.
///
/// JSON and engine state are opaque here: the store keeps the bytes, their owners interpret them.
public struct ChannelRecord: Sendable, Equatable {
    /// The provider's id for the channel (the match).
    public var id: String
    /// The id Apple assigned; nil until the create call has answered.
    public var apnsChannelID: String?
    public var storagePolicy: ChannelStorage
    /// The channel's policy overrides (rate limit, budget, ...) as JSON text.
    public var policyJSON: String
    public var status: ChannelStatus
    public var createdAt: UnixTime
    public var updatedAt: UnixTime
    /// The current content-state JSON.
    public var contentState: [UInt8]
    /// The content-state last sent to APNs, for coalescing after a restart.
    public var lastSentState: [UInt8]?
    /// The APNs `timestamp` of the last push (Unix seconds), kept strictly increasing across restarts.
    public var lastSentTimestamp: Int64?
    /// The highest provider `seq` applied; 0 before the first event.
    public var lastSeq: Int64
    /// The channel engine's own snapshot (rate limiter, priority budget, ...), opaque to the store.
    public var engineSnapshot: [UInt8]?
    public var end: ChannelEnd?
    /// Per-channel counters as JSON text.
    public var countersJSON: String
    /// Why the stored row could not be read in full (its columns hold values this build does
    /// not know); the other members are then stand-ins. Never written.
    public var unreadable: String?

    public init(id: String, apnsChannelID: String? = nil, storagePolicy: ChannelStorage, policyJSON: String = "{}",
                status: ChannelStatus = .creating, unreadable: String? = nil, createdAt: UnixTime, updatedAt: UnixTime? = nil,
                contentState: [UInt8] = Array("{}".utf8), lastSentState: [UInt8]? = nil, lastSentTimestamp: Int64? = nil,
                lastSeq: Int64 = 0, engineSnapshot: [UInt8]? = nil, end: ChannelEnd? = nil, countersJSON: String = "{}") {
        self.id = id
        self.apnsChannelID = apnsChannelID
        self.storagePolicy = storagePolicy
        self.policyJSON = policyJSON
        self.status = status
        self.unreadable = unreadable
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.contentState = contentState
        self.lastSentState = lastSentState
        self.lastSentTimestamp = lastSentTimestamp
        self.lastSeq = lastSeq
        self.engineSnapshot = engineSnapshot
        self.end = end
        self.countersJSON = countersJSON
    }
}

/// The answer to an idempotent create: the stored record and whether this call inserted it.
public struct ChannelCreation: Sendable, Equatable {
    public var record: ChannelRecord
    /// False when a channel with this id already existed; `record` is then the existing one.
    public var inserted: Bool

    public init(record: ChannelRecord, inserted: Bool) {
        self.record = record
        self.inserted = inserted
    }
}

/// One accepted provider event, as received, so channel state can be rebuilt from the log.
public struct StoredEvent: Sendable, Equatable {
    public var channelID: String
    public var seq: Int64
    public var receivedAt: UnixTime
    /// The event's raw JSON.
    public var body: [UInt8]

    public init(channelID: String, seq: Int64, receivedAt: UnixTime, body: [UInt8]) {
        self.channelID = channelID
        self.seq = seq
        self.receivedAt = receivedAt
        self.body = body
    }
}
