extension PartitionLeases {
    /// What the shell reports; each with the instant it happened on the instance's monotonic clock.
    public enum Input: Sendable, Equatable {
        /// The bucket's watch reported this revision of a key: late, repeated, out of order or
        /// an echo of the instance's own write are all fine (an older or equal revision than
        /// already known is ignored). The shell decodes a value with
        /// ``LeaseRecord/init(encoded:)`` and ignores keys ``LeaseKey/init(name:)`` refuses.
        case observed(LeaseKey, revision: Revision, value: ObservedValue)
        /// The watch has delivered every key's value as of its start. Until then the instance
        /// writes nothing: a key it has not heard of may exist.
        case caughtUp
        /// A ``Action/write(_:)`` finished. Every write is reported once; an answer after
        /// ``LeaseSettings/writeTimeout`` is still used (the write already counts as failed, but
        /// a late `.stored` tells when the lease was written).
        case completed(BucketWrite, WriteOutcome)
        /// Time passed: call at ``PartitionLeases/nextTick`` (late or early is harmless).
        case tick
        /// Leave the cluster: stop owning everything at once, then delete the instance's leases
        /// and heartbeat so that the others take over without waiting for a TTL.
        case shutdown
    }

    /// A key's value as the watch reports it.
    public enum ObservedValue: Hashable, Sendable {
        case record(LeaseRecord)
        /// A value ``LeaseRecord/init(encoded:)`` does not read: treated as written by an unknown
        /// holder, alive until it expires.
        case unreadable
        /// Deleted or purged.
        case deleted
    }

    /// What the shell must do, in order.
    public enum Action: Hashable, Sendable {
        /// Perform this conditional write, then report ``Input/completed(_:_:)``.
        case write(BucketWrite)
        /// The partition is this instance's from now: restore it and start its channel engines.
        /// `fence` is the lease revision that granted it (see ``Fence``).
        case startOwning(partition: Int, fence: Fence)
        /// Stop the partition's engines at once: the lease may be lost or about to be. It comes
        /// before any write that gives the lease away.
        case stopOwning(partition: Int)
        /// After ``Input/shutdown``: everything held was released or given up; nothing more
        /// will be asked, and the process may exit.
        case shutdownComplete
    }

    /// Where the instance is in its membership.
    public enum Phase: Sendable, Equatable {
        /// Waiting for the watch to catch up and for its first heartbeat to be stored; owns nothing.
        case joining
        /// A member: holds its share of partitions.
        case running
        /// After ``Input/shutdown``: deleting what it wrote.
        case leaving
        /// ``Action/shutdownComplete`` was given; every input is ignored.
        case left
    }
}
