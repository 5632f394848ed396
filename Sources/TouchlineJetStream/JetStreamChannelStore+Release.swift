import TouchlineStore

/// A gateway that gives a partition up drops what it holds of it: the partition's channels,
/// their events and its outbox rows, and what the store knew of its log. A gateway's memory
/// then follows the partitions it serves, not every partition it ever served; taking one up
/// again reads its log from the last snapshot (docs/cluster.md, "Giving a partition up").
extension JetStreamChannelStore {
    /// Drops `partition`'s tables behind the writes to its log already queued (a write in flight
    /// applies to the tables it was checked against before they go). Writes queued after it
    /// find none of the partition's channels, and may not be logged (its takeover is forgotten).
    public func release(partition: Int) {
        loop.execute { [self] in queueRelease(of: partition) }
    }

    /// Channels the tables hold now: those of the partitions read and not given up (`/metrics`).
    public var heldChannels: Int { committed.tables.withLock { $0.channels.count } }

    /// On the loop, as the partition log's one piece of work in flight.
    func dropTables(of partition: Int) {
        let log = ChannelLogLayout.Log.partition(partition)
        let (partitioning, layout) = (layout.partitioning, layout)
        committed.tables.withLock { tables in
            tables.removeChannels(where: { partitioning.partition(of: $0) == partition }, outbox: { layout.log(ofOutboxID: $0) == log })
        }
        releases[partition, default: 0] += 1
        lastSequence[log] = nil
        takenOver[partition] = nil
        stale.remove(partition)
        replayedRecordings[log] = nil
        snapshotReadings[log] = nil
        schedule.forget(partition)
    }

    /// How many times `log`'s tables were dropped (on the loop).
    func releases(of log: ChannelLogLayout.Log) -> Int {
        guard case .partition(let partition) = log else { return 0 }
        return releases[partition] ?? 0
    }
}
