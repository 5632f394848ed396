import TouchlineChannels
import TouchlineCore
import TouchlineJetStream
import TouchlineStore

/// A cluster's recordings: the stream of recordings beside the partition logs, readable from any
/// gateway; the channel itself from the owner's tables (docs/cluster.md, "Feed recordings on the
/// cluster").
struct ClusterFeedRecordings: FeedRecordings {
    /// How far the gateways' clocks may differ: an event is stamped by the owner that took it,
    /// the channel's creation by the owner then. (Older events are a deleted channel's of the
    /// same id, left only if removing its recording failed.)
    static let clockTolerance = Duration.seconds(60)

    let store: JetStreamChannelStore

    /// The cluster's recording is read whole (its ordered consumer delivers it at once), then
    /// handed out in pages.
    func pages(of channelID: String, createdAt: UnixTime) throws -> any RecordedEventPages {
        ReadEventPages(events: try store.recordedEvents(of: channelID, since: createdAt + (.zero - Self.clockTolerance),
                                                        limit: FeedRecording.maximumEvents))
    }

    func channel(_ channelID: String) throws -> ChannelRecord? {
        let reader = store.openReader()
        defer { reader.close() }
        return try reader.channel(id: channelID)
    }
}
