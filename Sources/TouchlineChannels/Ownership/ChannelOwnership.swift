import TouchlineCore

/// Which channels this gateway acts for at this instant: pushes, timers and APNs calls of a
/// channel happen only while it does.
///
/// A gateway on its own (SQLite) acts for every channel, always (``AllChannels``). In a cluster
/// it acts for the channels of the partitions whose leases it holds, and asks before every push,
/// since a lease can lapse between two inputs (docs/cluster.md, "Partition leases"). Used on the
/// ingest loop.
package protocol ChannelOwnership: AnyObject {
    func actsFor(_ channelID: String) -> Bool
    /// The fence of the lease this gateway acts for the channel under now; nil on a gateway on
    /// its own (no lease) or when it does not act for it. Pushes carry it (``ChannelMachine``).
    func fence(for channelID: String) -> Fence?
    /// The last check a side effect of the channel decided under `fence` carries to the moment
    /// its bytes leave (the APNs request's HEADERS frame); nil when there is nothing to check.
    func sideEffectFence(for channelID: String, fence: Fence) -> (any SideEffectFence)?
}

/// A gateway on its own: every channel is its own, with no lease to fence.
package final class AllChannels: ChannelOwnership, Sendable {
    package init() {}

    package func actsFor(_ channelID: String) -> Bool { true }
    package func fence(for channelID: String) -> Fence? { nil }
    package func sideEffectFence(for channelID: String, fence: Fence) -> (any SideEffectFence)? { nil }
}
