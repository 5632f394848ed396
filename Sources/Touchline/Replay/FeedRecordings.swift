import TouchlineCore
import TouchlineJetStream
import TouchlineStore

/// Where a gateway's channels keep their recorded feeds (``StoreOperation/recordEvents(_:)``),
/// as the export and a channel's restore read them. Blocking: called on the exporting thread,
/// or where channels are loaded.
protocol FeedRecordings: Sendable {
    /// The recorded events of channel `channelID`, created at `createdAt` (nothing older is
    /// its), in `seq` order, each once, at most `limit`.
    func events(of channelID: String, createdAt: UnixTime, limit: Int) throws -> [StoredEvent]
    /// How many events the channel's recording holds.
    func count(of channelID: String) throws -> Int
    /// The channel as stored (its end, once it has ended).
    func channel(_ channelID: String) throws -> ChannelRecord?
}

/// The embedded store's recordings: a recording channel's event log, never truncated, read with
/// a reader opened for the call.
struct StoredFeedRecordings: FeedRecordings {
    let openReader: @Sendable () throws -> any ChannelStoreReader

    func events(of channelID: String, createdAt: UnixTime, limit: Int) throws -> [StoredEvent] {
        let reader = try openReader()
        defer { reader.close() }
        var events: [StoredEvent] = []
        while events.count < limit, case let page = try reader.events(channelID: channelID, afterSeq: events.last?.seq ?? .min, limit: 1_000),
              !page.isEmpty {
            events += page.prefix(limit - events.count)
        }
        return events
    }

    func count(of channelID: String) throws -> Int {
        let reader = try openReader()
        defer { reader.close() }
        var (count, after): (Int, Int64) = (0, .min)
        while case let page = try reader.events(channelID: channelID, afterSeq: after, limit: 1_000), let last = page.last {
            count += page.count
            after = last.seq
        }
        return count
    }

    func channel(_ channelID: String) throws -> ChannelRecord? {
        let reader = try openReader()
        defer { reader.close() }
        return try reader.channel(id: channelID)
    }
}

/// A cluster's recordings: the stream of recordings beside the partition logs, readable from any
/// gateway; the channel itself from the owner's tables (docs/cluster.md, "Feed recordings on the
/// cluster").
struct ClusterFeedRecordings: FeedRecordings {
    /// How far the gateways' clocks may differ: an event is stamped by the owner that took it,
    /// the channel's creation by the owner then. (Older events are a deleted channel's of the
    /// same id, left only if removing its recording failed.)
    static let clockTolerance = Duration.seconds(60)

    let store: JetStreamChannelStore

    func events(of channelID: String, createdAt: UnixTime, limit: Int) throws -> [StoredEvent] {
        try store.recordedEvents(of: channelID, since: createdAt + (.zero - Self.clockTolerance), limit: limit)
    }

    func count(of channelID: String) throws -> Int { try store.recordedEventCount(of: channelID) }

    func channel(_ channelID: String) throws -> ChannelRecord? {
        let reader = store.openReader()
        defer { reader.close() }
        return try reader.channel(id: channelID)
    }
}
