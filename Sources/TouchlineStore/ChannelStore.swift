import TouchlineCore

/// Durable writes for channels and their event log: on SQLite (``StoreWriter``), in memory for
/// tests, and on a NATS JetStream log (`JetStreamChannelStore`). Keeps the contract of
/// ``DurableStoreWriter`` (completion only once durable, on the writer's thread; all-or-nothing
/// batches; submission order, which a store split into partitions keeps per partition, so per
/// channel, while its partitions complete independently).
public protocol ChannelStoreWriter: DurableStoreWriter {
    /// Commits `batch` all-or-nothing, with the channel state and events it carries. An update,
    /// status change or `channelCreated` for a channel the store does not have fails the batch
    /// with ``StoreError/unknownChannel(_:)``; an event whose `(channel, seq)` is logged already,
    /// or whose channel is unknown, fails it too. A webhook event recorded in the batch
    /// (``StoreOperation/webhook(_:)``) commits with it or not at all. A batch carries one
    /// channel's operations (the gateway never writes two channels together): a store split
    /// into partitions (the JetStream backend) refuses a batch whose channels are in different
    /// partitions, since it could not commit it as one.
    func submit(_ batch: WriteBatch, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void)

    /// The create intent: inserts `record` unless its id exists; answers with the stored record
    /// either way and whether this call inserted it (a second create must not call APNs again).
    func createChannel(_ record: ChannelRecord, completion: @escaping @Sendable (Result<ChannelCreation, StoreError>) -> Void)
}

/// Reads of committed channels and events. A reader sees only what a completed write committed
/// (never part of a batch), and each call sees one consistent state. An implementation may be
/// confined to the thread that uses it: open one per thread or loop, and close it there.
public protocol ChannelStoreReader: AnyObject {
    func channel(id: String) throws(StoreError) -> ChannelRecord?

    /// The channel Apple knows as `apnsChannelID`, if any: reconciliation uses it to find the
    /// ids in APNs' list-all that no channel accounts for (creates whose answer was lost).
    func channel(apnsChannelID: String) throws(StoreError) -> ChannelRecord?

    /// Up to `limit` channels in id order, starting after `afterID` (nil: from the first): keyset
    /// pagination for `GET /v1/channels`; the last id of a page is the next cursor, an empty page
    /// the end. Channels created while paging are seen if they sort after the cursor.
    func channels(after afterID: String?, limit: Int) throws(StoreError) -> [ChannelRecord]

    /// Channels in `status`, in id order; at startup `.creating` lists the create intents to reconcile.
    func channels(status: ChannelStatus) throws(StoreError) -> [ChannelRecord]

    /// Up to `limit` of a channel's logged events with `seq > afterSeq`, in seq order.
    func events(channelID: String, afterSeq: Int64, limit: Int) throws(StoreError) -> [StoredEvent]

    /// Releases the reader (on its thread); it is not used afterwards.
    func close()
}
