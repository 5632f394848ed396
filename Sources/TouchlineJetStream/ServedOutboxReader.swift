import TouchlineCore
import TouchlineStore

/// A cluster gateway's channel outbox as its webhook delivery and `GET /v1/events` read it:
/// the events of the partitions it serves now, and nothing else. Each partition's events live
/// in its log (``ChannelLogLayout/outboxID(of:sequence:index:)``), so the partition's owner
/// delivers them and logs their outcomes; a gateway still holding the rows of a partition it
/// gave up (until its own prune drops them) neither delivers nor lists them. Rows recorded in
/// the global log (a gateway records none there) are nobody's and are not read.
///
/// `served` is asked on every read (the partitions this gateway serves, published by the
/// cluster node); the reader is confined to the thread that uses it, like the others.
public final class ServedOutboxReader: WebhookOutboxReader {
    private let tables: JetStreamChannelStoreReader
    private let layout: ChannelLogLayout
    private let served: @Sendable () -> Set<Int>

    public init(_ tables: JetStreamChannelStoreReader, layout: ChannelLogLayout, served: @escaping @Sendable () -> Set<Int>) {
        self.tables = tables
        self.layout = layout
        self.served = served
    }

    /// Whether outbox row `id` belongs to one of `partitions`.
    private func belongs(_ id: Int64, to partitions: Set<Int>) -> Bool {
        guard case .partition(let partition) = layout.log(ofOutboxID: id) else { return false }
        return partitions.contains(partition)
    }

    /// A filter on the partitions served at the time of the read.
    private func servedNow() -> (Int64) -> Bool {
        let partitions = served()
        return { [self] id in belongs(id, to: partitions) }
    }

    public func dueDeliveries(endpoint: String, at now: UnixTime, limit: Int) throws(StoreError) -> [DueWebhookDelivery] {
        let include = servedNow()
        return try tables.readTables { $0.dueDeliveries(endpoint: endpoint, at: now, limit: limit, outbox: include) }
    }

    public func nextDue(endpoint: String) throws(StoreError) -> UnixTime? {
        let include = servedNow()
        return try tables.readTables { $0.nextDue(endpoint: endpoint, outbox: include) }
    }

    /// The served partitions' events after `after`, by id: within one partition, commit order.
    public func events(after: Int64, limit: Int) throws(StoreError) -> [StoredWebhookEvent] {
        let include = servedNow()
        return try tables.readTables { $0.outboxEvents(after: after, limit: limit, outbox: include) }
    }

    /// Each served partition's events after its own position (`after(partition)`), up to `limit`
    /// each, in commit order: one read of the tables for every partition (a partition served
    /// with nothing after its position has an empty page).
    public func eventsByPartition(after: (Int) -> Int64, limit: Int) throws(StoreError) -> [Int: [StoredWebhookEvent]] {
        let partitions = served()
        let rows = try tables.readTables { tables in
            tables.outboxEvents(after: 0, limit: .max, outbox: { [self] id in
                guard case .partition(let partition) = layout.log(ofOutboxID: id), partitions.contains(partition) else { return false }
                return id > after(partition)
            })
        }
        var pages = Dictionary(uniqueKeysWithValues: partitions.map { ($0, [StoredWebhookEvent]()) })
        for row in rows {
            guard case .partition(let partition) = layout.log(ofOutboxID: row.id), pages[partition]!.count < limit else { continue }
            pages[partition]!.append(row)
        }
        return pages
    }

    /// Over every row held, served or not: this is what the gateway's own prune looks at.
    public func oldestEventCreatedAt() throws(StoreError) -> UnixTime? { try tables.readTables { $0.oldestOutboxEventCreatedAt } }

    public func lastEventID() throws(StoreError) -> Int64 {
        let include = servedNow()
        return try tables.readTables { $0.outboxEvents(after: 0, limit: .max, outbox: include).last?.id ?? 0 }
    }

    public func backlog(endpoint: String) throws(StoreError) -> WebhookEndpointBacklog {
        let include = servedNow()
        return try tables.readTables { $0.backlog(endpoint: endpoint, outbox: include) }
    }

    public func close() { tables.close() }
}
