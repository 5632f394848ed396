import TouchlineCore

/// The reads of ``ChannelStoreReader`` and ``WebhookOutboxReader`` on one state of the tables,
/// with the orders and bounds those protocols document.
extension ChannelTables {
    public func channel(id: String) -> ChannelRecord? { channels[id] }

    public func channel(apnsChannelID: String) -> ChannelRecord? { channelIDsByAPNsID[apnsChannelID].flatMap { channels[$0] } }

    public func channels(after afterID: String?, limit: Int) -> [ChannelRecord] {
        let first = afterID.map(orderedIndex(after:)) ?? 0
        return orderedIDs[first..<min(orderedIDs.count, first + max(0, limit))].compactMap { channels[$0] }
    }

    public func channels(status: ChannelStatus) -> [ChannelRecord] {
        channels.values.filter { $0.status == status }.sorted { Self.precedes($0.id, $1.id) }
    }

    public func events(channelID: String, afterSeq: Int64, limit: Int) -> [StoredEvent] {
        Array((events[channelID] ?? [:]).values.filter { $0.seq > afterSeq }.sorted { $0.seq < $1.seq }.prefix(max(0, limit)))
    }

    // MARK: Webhook outbox

    // Each read takes the outbox rows `include` selects by id (all by default): a cluster
    // gateway reads the rows of the partitions it serves.

    public func dueDeliveries(endpoint: String, at now: UnixTime, limit: Int,
                              outbox include: (Int64) -> Bool = { _ in true }) -> [DueWebhookDelivery] {
        deliveries.filter { $0.key.endpoint == endpoint && $0.value.status == .pending && $0.value.nextAt <= now && include($0.key.outboxID) }
            .sorted { ($0.value.nextAt, $0.key.outboxID) < ($1.value.nextAt, $1.key.outboxID) }
            .prefix(max(0, limit))
            .compactMap { key, delivery in
                outbox[key.outboxID].map { DueWebhookDelivery(endpoint: endpoint, attempts: delivery.attempts, event: $0) }
            }
    }

    public func nextDue(endpoint: String, outbox include: (Int64) -> Bool = { _ in true }) -> UnixTime? {
        deliveries.filter { $0.key.endpoint == endpoint && $0.value.status == .pending && include($0.key.outboxID) }.map(\.value.nextAt).min()
    }

    public func outboxEvents(after: Int64, limit: Int, outbox include: (Int64) -> Bool = { _ in true }) -> [StoredWebhookEvent] {
        Array(outbox.values.filter { $0.id > after && include($0.id) }.sorted { $0.id < $1.id }.prefix(max(0, limit)))
    }

    public var oldestOutboxEventCreatedAt: UnixTime? { outbox.values.map(\.createdAt).min() }

    public var lastOutboxEventID: Int64 { outbox.keys.max() ?? 0 }

    public func backlog(endpoint: String, outbox include: (Int64) -> Bool = { _ in true }) -> WebhookEndpointBacklog {
        var backlog = WebhookEndpointBacklog()
        for (key, delivery) in deliveries where key.endpoint == endpoint && include(key.outboxID) {
            switch delivery.status {
            case .pending:
                backlog.pending += 1
                if let created = outbox[key.outboxID]?.createdAt, backlog.oldestPendingAt.map({ created < $0 }) ?? true {
                    backlog.oldestPendingAt = created
                }
            case .dead: backlog.dead += 1
            case .delivered: break
            }
        }
        return backlog
    }
}

/// A ``ChannelStoreReader`` over tables held in memory: it says how to read one committed state
/// (under the store's lock, failing once the reader is closed), and gets every read from it.
public protocol ChannelTablesReader: ChannelStoreReader {
    func readTables<T>(_ body: (ChannelTables) -> T) throws(StoreError) -> T
}

extension ChannelTablesReader {
    public func channel(id: String) throws(StoreError) -> ChannelRecord? { try readTables { $0.channel(id: id) } }

    public func channel(apnsChannelID: String) throws(StoreError) -> ChannelRecord? {
        try readTables { $0.channel(apnsChannelID: apnsChannelID) }
    }

    public func channels(after afterID: String?, limit: Int) throws(StoreError) -> [ChannelRecord] {
        try readTables { $0.channels(after: afterID, limit: limit) }
    }

    public func channels(status: ChannelStatus) throws(StoreError) -> [ChannelRecord] { try readTables { $0.channels(status: status) } }

    public func events(channelID: String, afterSeq: Int64, limit: Int) throws(StoreError) -> [StoredEvent] {
        try readTables { $0.events(channelID: channelID, afterSeq: afterSeq, limit: limit) }
    }
}

/// The reads of ``WebhookOutboxReader`` for a reader of tables held in memory: one committed
/// state of the tables' outbox each.
extension WebhookOutboxReader where Self: ChannelTablesReader {
    public func dueDeliveries(endpoint: String, at now: UnixTime, limit: Int) throws(StoreError) -> [DueWebhookDelivery] {
        try readTables { $0.dueDeliveries(endpoint: endpoint, at: now, limit: limit) }
    }

    public func nextDue(endpoint: String) throws(StoreError) -> UnixTime? { try readTables { $0.nextDue(endpoint: endpoint) } }

    public func events(after: Int64, limit: Int) throws(StoreError) -> [StoredWebhookEvent] {
        try readTables { $0.outboxEvents(after: after, limit: limit) }
    }

    public func oldestEventCreatedAt() throws(StoreError) -> UnixTime? { try readTables { $0.oldestOutboxEventCreatedAt } }

    public func lastEventID() throws(StoreError) -> Int64 { try readTables { $0.lastOutboxEventID } }

    public func backlog(endpoint: String) throws(StoreError) -> WebhookEndpointBacklog { try readTables { $0.backlog(endpoint: endpoint) } }
}
