import TouchlineCore

/// Durable writes for channels and their event log.
///
/// Small on purpose: a SQLite implementation now, a NATS JetStream one later. Completions run on
/// the store's own thread, only after the write is durable (or has failed); hop back to your
/// loop with `EventLoop.execute`.
public protocol ChannelStoreWriter: Sendable {
    /// Commits `batch` all-or-nothing.
    func submit(_ batch: WriteBatch, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void)

    /// Inserts `record` unless its id exists; answers with the stored record either way.
    func createChannel(_ record: ChannelRecord, completion: @escaping @Sendable (Result<ChannelCreation, StoreError>) -> Void)
}

/// Reads of committed data. An implementation may be confined to the thread that uses it.
public protocol ChannelStoreReader {
    func channel(id: String) throws(StoreError) -> ChannelRecord?

    /// The channel Apple knows as `apnsChannelID`, if any: reconciliation uses it to find the
    /// ids in APNs' list-all that no channel accounts for (creates whose answer was lost).
    func channel(apnsChannelID: String) throws(StoreError) -> ChannelRecord?

    /// Channels ordered by id, starting after `afterID`: keyset pagination for `GET /v1/channels`.
    func channels(after afterID: String?, limit: Int) throws(StoreError) -> [ChannelRecord]

    /// Channels in `status`; at startup `.creating` lists the create intents to reconcile.
    func channels(status: ChannelStatus) throws(StoreError) -> [ChannelRecord]

    /// A channel's logged events with `seq > afterSeq`, in seq order.
    func events(channelID: String, afterSeq: Int64, limit: Int) throws(StoreError) -> [StoredEvent]
}
