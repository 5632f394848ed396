/// Some of the channels as tables of their own, and put back: the JetStream backend snapshots
/// one partition's channels (with their event logs and the partition's share of the webhook
/// outbox) and restores a partition from such a snapshot without touching the other
/// partitions' channels and outbox rows.
extension ChannelTables {
    /// The channels `include` selects, with their events, and the outbox rows `includeOutbox`
    /// selects (by id), with their deliveries.
    public func subset(where include: (String) -> Bool, outbox includeOutbox: (Int64) -> Bool = { _ in false }) -> ChannelTables {
        var subset = ChannelTables()
        for (id, record) in channels where include(id) {
            subset.store(record)
            if let logged = events[id] { subset.events[id] = logged }
        }
        for (id, row) in outbox where includeOutbox(id) {
            subset.outbox[id] = row
            subset.outboxIDs[row.eventID] = id
        }
        subset.deliveries = deliveries.filter { includeOutbox($0.key.outboxID) }
        subset.lastOutboxID = subset.outbox.keys.max() ?? 0
        return subset
    }

    /// Replaces the channels `include` selects (and their events) with `subset`'s, and the outbox
    /// rows `includeOutbox` selects (and their deliveries) with `subset`'s; everything `subset`
    /// holds must be selected too. The rest is kept as it is. All or nothing: on a refusal the
    /// tables are as they were.
    public mutating func replaceChannels(where include: (String) -> Bool, outbox includeOutbox: (Int64) -> Bool = { _ in false },
                                         with subset: ChannelTables) throws(StoreError) {
        if let foreign = subset.channels.keys.first(where: { !include($0) }) {
            throw .refused("channel \(foreign) does not belong where it is restored")
        }
        if let foreign = subset.outbox.keys.first(where: { !includeOutbox($0) }) {
            throw .refused("outbox row \(foreign) does not belong where it is restored")
        }
        var next = self
        next.removeChannels(where: include, outbox: includeOutbox)
        let keptAPNsIDs = next.channelIDsByAPNsID
        for (id, record) in subset.channels {
            if let apnsID = record.apnsChannelID, keptAPNsIDs[apnsID] != nil {
                throw .refused("UNIQUE constraint failed: channels.apns_channel_id (\(id))")
            }
            next.store(record)
            if let logged = subset.events[id] { next.events[id] = logged }
        }
        for (id, row) in subset.outbox {
            next.outbox[id] = row
            next.outboxIDs[row.eventID] = id
        }
        next.deliveries.merge(subset.deliveries) { _, restored in restored }
        next.lastOutboxID = max(next.lastOutboxID, subset.lastOutboxID)
        self = next
    }

    /// Removes the channels `include` selects (and their events) and the outbox rows
    /// `includeOutbox` selects (and their deliveries): a cluster gateway drops a partition it
    /// gave up.
    public mutating func removeChannels(where include: (String) -> Bool, outbox includeOutbox: (Int64) -> Bool = { _ in false }) {
        for id in channels.keys.filter(include) { _ = forgetChannel(id) }
        orderedIDs.removeAll(where: include)
        for id in outbox.keys.filter(includeOutbox) {
            if let row = outbox.removeValue(forKey: id) { outboxIDs[row.eventID] = nil }
        }
        deliveries = deliveries.filter { !includeOutbox($0.key.outboxID) }
    }
}
