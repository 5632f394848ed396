import TouchlineCore

/// A change to a channel's mutable state; nil fields are left as they are.
public struct ChannelStateUpdate: Sendable, Equatable {
    public var channelID: String
    public var updatedAt: UnixTime
    public var contentState: [UInt8]?
    public var lastSeq: Int64?
    public var lastSentState: [UInt8]?
    public var lastSentTimestamp: Int64?
    public var engineSnapshot: [UInt8]?
    public var countersJSON: String?
    public var policyJSON: String?

    public init(channelID: String, updatedAt: UnixTime, contentState: [UInt8]? = nil, lastSeq: Int64? = nil,
                lastSentState: [UInt8]? = nil, lastSentTimestamp: Int64? = nil, engineSnapshot: [UInt8]? = nil,
                countersJSON: String? = nil, policyJSON: String? = nil) {
        self.channelID = channelID
        self.updatedAt = updatedAt
        self.contentState = contentState
        self.lastSeq = lastSeq
        self.lastSentState = lastSentState
        self.lastSentTimestamp = lastSentTimestamp
        self.engineSnapshot = engineSnapshot
        self.countersJSON = countersJSON
        self.policyJSON = policyJSON
    }
}

/// One write in a batch. Backend-neutral, so another store can replay the same batches.
public enum StoreOperation: Sendable, Equatable {
    /// Inserts the channel unless one with its id exists (then nothing changes).
    case createChannel(ChannelRecord)
    /// The APNs create call answered: record Apple's id and make the channel active.
    case channelCreated(channelID: String, apnsChannelID: String, at: UnixTime)
    case updateState(ChannelStateUpdate)
    /// Sets the status (and, for an end, how it ended).
    case markStatus(channelID: String, status: ChannelStatus, end: ChannelEnd?, at: UnixTime)
    /// Removes the channel and its event log.
    case deleteChannel(channelID: String)
    /// Appends accepted events; a (channel, seq) already in the log fails the batch.
    case appendEvents([StoredEvent])
    /// Appends accepted events of a channel that records its feed: kept for the feed's export,
    /// never truncated. An embedded store keeps them in the channel's event log like
    /// ``appendEvents(_:)``; the cluster's store keeps them in a stream of recordings beside
    /// its log, so its snapshots stay the size of the channels' state (docs/cluster.md).
    case recordEvents([StoredEvent])
    /// Drops a channel's events with `seq <= throughSeq`, once a durable snapshot covers them.
    case truncateEvents(channelID: String, throughSeq: Int64)
    /// Records a webhook event (or a delivery outcome) in this file's outbox, in the same
    /// commit as the channel change it reports.
    case webhook(WebhookOperation)
}

/// Writes that commit together or not at all.
public struct WriteBatch: Sendable, Equatable {
    public var operations: [StoreOperation]
    /// Nobody waits for it (a channel's bookkeeping after a push): a store may hold it for a
    /// moment and commit it with the next write (the SQLite store: ``StoreWriter/deferral``),
    /// so that a steady flow of events costs one commit each instead of two. Order is kept.
    public var deferrable: Bool

    public init(_ operations: [StoreOperation] = [], deferrable: Bool = false) {
        self.operations = operations
        self.deferrable = deferrable
    }

    public mutating func append(_ operation: StoreOperation) { operations.append(operation) }
    public var isEmpty: Bool { operations.isEmpty }
}
