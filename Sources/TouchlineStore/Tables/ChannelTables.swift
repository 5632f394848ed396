import TouchlineCore

/// A store's channel side as values: channels, their event logs and the webhook outbox, with
/// the rules the SQLite schema enforces (unique APNs ids, events only for known channels and
/// once per seq, outbox ids never reused). A store that keeps its tables in memory (the test
/// store, or the JetStream backend that rebuilds them from its log) applies each batch to a copy
/// (the JetStream backend: of the rows the batch touches, ``scoped(to:)``) and keeps the
/// outcome only when every operation succeeded: the all-or-nothing rule.
/// Orders follow SQLite's binary collation (byte order of UTF-8), so every backend pages alike.
public struct ChannelTables: Sendable {
    struct DeliveryKey: Hashable, Sendable {
        var endpoint: String
        var outboxID: Int64
    }

    struct Delivery: Sendable {
        var attempts: Int
        var nextAt: UnixTime
        var status: WebhookDeliveryStatus
    }

    /// Changed only through ``store(_:)`` and ``removeChannel(_:)``, which keep
    /// ``channelIDsByAPNsID`` and ``orderedIDs`` in step.
    public private(set) var channels: [String: ChannelRecord] = [:]
    /// The channels' ids in the listing order (``precedes(_:_:)``): a page of the listing is a
    /// binary search and a slice, not a sort of every channel. A gateway taking a partition up
    /// pages through all the channels it holds; sorting them all per page made that quadratic.
    var orderedIDs: [String] = []
    /// Which channel holds each APNs channel id: the uniqueness check, and the scope of a batch
    /// that sets one (``scoped(to:)``), without looking at every channel.
    private(set) var channelIDsByAPNsID: [String: String] = [:]
    /// Per channel, by seq.
    var events: [String: [Int64: StoredEvent]] = [:]
    var outbox: [Int64: StoredWebhookEvent] = [:]
    var outboxIDs: [String: Int64] = [:]
    var deliveries: [DeliveryKey: Delivery] = [:]
    /// Like AUTOINCREMENT: never reused, even after a prune.
    var lastOutboxID: Int64 = 0

    public init() {}

    /// SQLite's binary collation: byte order of UTF-8, the order every listing pages in.
    public static func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    // MARK: Channel operations

    /// Inserts unless the id exists; answers whether it did.
    public mutating func insert(_ record: ChannelRecord) throws(StoreError) -> Bool {
        guard channels[record.id] == nil else { return false }
        if let apnsID = record.apnsChannelID, channelIDsByAPNsID[apnsID] != nil {
            throw .refused("UNIQUE constraint failed: channels.apns_channel_id")
        }
        var stored = record
        stored.unreadable = nil
        store(stored)
        return true
    }

    public mutating func apply(_ operation: StoreOperation) throws(StoreError) {
        switch operation {
        case .createChannel(let record):
            _ = try insert(record)
        case .channelCreated(let id, let apnsID, let at):
            if let holder = channelIDsByAPNsID[apnsID], holder != id {
                throw .refused("UNIQUE constraint failed: channels.apns_channel_id")
            }
            try updateChannel(id) { channel in
                channel.apnsChannelID = apnsID
                channel.status = .active
                channel.updatedAt = at
            }
        case .updateState(let update):
            try updateChannel(update.channelID) { channel in
                channel.updatedAt = update.updatedAt
                channel.contentState = update.contentState ?? channel.contentState
                channel.lastSeq = update.lastSeq ?? channel.lastSeq
                channel.lastSentState = update.lastSentState ?? channel.lastSentState
                channel.lastSentTimestamp = update.lastSentTimestamp ?? channel.lastSentTimestamp
                channel.engineSnapshot = update.engineSnapshot ?? channel.engineSnapshot
                channel.countersJSON = update.countersJSON ?? channel.countersJSON
                channel.policyJSON = update.policyJSON ?? channel.policyJSON
            }
        case .markStatus(let id, let status, let end, let at):
            try updateChannel(id) { channel in
                channel.status = status
                channel.updatedAt = at
                if let end { channel.end = ChannelEnd(dismissAt: end.dismissAt ?? channel.end?.dismissAt, endedAt: end.endedAt) }
            }
        case .deleteChannel(let id):
            removeChannel(id)
        case .appendEvents(let appended), .recordEvents(let appended):
            for event in appended {
                guard channels[event.channelID] != nil else { throw .refused("FOREIGN KEY constraint failed: events.channel_id") }
                guard events[event.channelID]?[event.seq] == nil else {
                    throw .refused("UNIQUE constraint failed: events.channel_id, events.seq")
                }
                events[event.channelID, default: [:]][event.seq] = event
            }
        case .truncateEvents(let id, let throughSeq):
            events[id] = events[id]?.filter { $0.key > throughSeq }
        case .webhook(let operation):
            apply(operation)
        }
    }

    private mutating func updateChannel(_ id: String, _ change: (inout ChannelRecord) -> Void) throws(StoreError) {
        guard var channel = channels[id] else { throw .unknownChannel(id) }
        change(&channel)
        store(channel)
    }

    /// Puts `record` in its place, replacing any channel of its id, and indexes its id and APNs id.
    mutating func store(_ record: ChannelRecord) {
        let previous = channels.updateValue(record, forKey: record.id)
        if previous == nil { orderedIDs.insert(record.id, at: orderedIndex(after: record.id)) }
        // A state update keeps the APNs id: the index is written only when it changes.
        guard previous?.apnsChannelID != record.apnsChannelID else { return }
        if let previousAPNsID = previous?.apnsChannelID, channelIDsByAPNsID[previousAPNsID] == record.id {
            channelIDsByAPNsID[previousAPNsID] = nil
        }
        if let apnsID = record.apnsChannelID { channelIDsByAPNsID[apnsID] = record.id }
    }

    /// Removes a channel and its events.
    mutating func removeChannel(_ id: String) {
        guard forgetChannel(id) else { return }
        let index = orderedIndex(after: id) - 1
        if orderedIDs.indices.contains(index), orderedIDs[index] == id { orderedIDs.remove(at: index) }
    }

    /// Removes a channel and its events, leaving ``orderedIDs`` to the caller (which removes
    /// many at once); whether it was there.
    mutating func forgetChannel(_ id: String) -> Bool {
        events[id] = nil
        guard let removed = channels.removeValue(forKey: id) else { return false }
        if let apnsID = removed.apnsChannelID, channelIDsByAPNsID[apnsID] == id { channelIDsByAPNsID[apnsID] = nil }
        return true
    }

    /// The position in ``orderedIDs`` of the first id that `id` precedes: where `id` goes, or
    /// just past it when it is there.
    func orderedIndex(after id: String) -> Int {
        var (low, high) = (0, orderedIDs.count)
        while low < high {
            let middle = (low + high) / 2
            if Self.precedes(id, orderedIDs[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }

    // MARK: Outbox

    public mutating func apply(_ operation: WebhookOperation) {
        switch operation {
        case .record(let entry):
            record(entry, id: lastOutboxID + 1)
        case .updateDeliveries(let updates):
            for update in updates {
                let key = DeliveryKey(endpoint: update.endpoint, outboxID: update.outboxID)
                guard deliveries[key] != nil else { continue }
                deliveries[key] = Delivery(attempts: update.attempts, nextAt: update.nextAt, status: update.status)
            }
        case .prune(let before, let limit):
            let doomed = outbox.values.filter { $0.createdAt < before }
                .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.prefix(max(0, limit)).map(\.id)
            for id in doomed {
                if let event = outbox.removeValue(forKey: id) { outboxIDs[event.eventID] = nil }
            }
            let gone = Set(doomed)
            deliveries = deliveries.filter { !gone.contains($0.key.outboxID) }
        }
    }

    /// Applies a batch whose outbox rows are numbered by the caller: the JetStream backend
    /// numbers them by where its log put the batch (`outboxID(n)` for the batch's `n`th record,
    /// from 0), so every gateway that replays the log gives an event the same id. In place, for
    /// batches already checked: an operation that fails leaves the ones before it applied.
    public mutating func apply(_ batch: WriteBatch, outboxID: (Int) -> Int64) throws(StoreError) {
        var recorded = 0
        for operation in batch.operations {
            if case .webhook(.record(let entry)) = operation {
                record(entry, id: outboxID(recorded))
                recorded += 1
            } else {
                try apply(operation)
            }
        }
    }

    /// Stores `entry` as outbox row `id` with a pending delivery per endpoint, unless its event id
    /// is stored already. Ids only grow: `lastOutboxID` follows the highest given.
    private mutating func record(_ entry: WebhookOutboxEntry, id: Int64) {
        guard outboxIDs[entry.eventID] == nil else { return }
        lastOutboxID = max(lastOutboxID, id)
        outbox[id] = StoredWebhookEvent(id: id, eventID: entry.eventID, type: entry.type, createdAt: entry.createdAt, body: entry.body)
        outboxIDs[entry.eventID] = id
        for endpoint in Set(entry.endpoints) {
            deliveries[DeliveryKey(endpoint: endpoint, outboxID: id)] = Delivery(attempts: 0, nextAt: entry.createdAt, status: .pending)
        }
    }
}
