/// Some of the channels as tables of their own, and put back: the JetStream backend snapshots
/// one partition's channels (with their event logs) and restores a partition from such a
/// snapshot without touching the other partitions' channels or the outbox.
extension ChannelTables {
    /// The channels `include` selects, with their events; no outbox.
    public func subset(where include: (String) -> Bool) -> ChannelTables {
        var subset = ChannelTables()
        for (id, record) in channels where include(id) {
            subset.channels[id] = record
            if let logged = events[id] { subset.events[id] = logged }
        }
        return subset
    }

    /// Replaces the channels `include` selects (and their events) with `subset`'s, which must
    /// all be selected by `include` too; the other channels and the outbox are kept as they are.
    /// All or nothing: on a refusal the tables are as they were.
    public mutating func replaceChannels(where include: (String) -> Bool, with subset: ChannelTables) throws(StoreError) {
        if let foreign = subset.channels.keys.first(where: { !include($0) }) {
            throw .refused("channel \(foreign) does not belong where it is restored")
        }
        var next = self
        for id in channels.keys where include(id) {
            next.channels[id] = nil
            next.events[id] = nil
        }
        let apnsIDs = Set(next.channels.values.compactMap(\.apnsChannelID))
        for (id, record) in subset.channels {
            if let apnsID = record.apnsChannelID, apnsIDs.contains(apnsID) {
                throw .refused("UNIQUE constraint failed: channels.apns_channel_id (\(id))")
            }
            next.channels[id] = record
            if let logged = subset.events[id] { next.events[id] = logged }
        }
        self = next
    }
}
