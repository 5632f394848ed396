import TouchlineCore

/// Which channels this gateway acts for at this instant: pushes, timers and APNs calls of a
/// channel happen only while it does.
///
/// A gateway on its own (SQLite) acts for every channel, always (``AllChannels``). In a cluster
/// it acts for the channels of the partitions whose leases it holds, and asks before every push,
/// since a lease can lapse between two inputs (docs/cluster.md, "Partition leases"). Used on the
/// ingest loop.
protocol ChannelOwnership: AnyObject {
    func actsFor(_ channelID: String) -> Bool
}

/// A gateway on its own: every channel is its own.
final class AllChannels: ChannelOwnership, Sendable {
    func actsFor(_ channelID: String) -> Bool { true }
}
