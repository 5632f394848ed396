/// When a partition's log gets a snapshot of its channels (docs/cluster.md, "Snapshots").
///
/// A snapshot is due once the batches logged to a partition since its last snapshot weigh as
/// much as that snapshot (``Settings/logShareOfSnapshot`` of it, at most
/// ``Settings/maximumLogBytes`` and at least ``Settings/minimumLogBytes``). So a new owner reads
/// at most about twice the partition's state however long the match, a busy partition is not
/// snapshotted after every batch, and the log the servers keep stays proportional to the state.
/// A value type with no I/O: the store tells it what was logged and read, and asks it.
public struct SnapshotSchedule: Sendable, Equatable {
    public struct Settings: Sendable, Equatable {
        /// Batches logged since the last snapshot must weigh at least this much before the next.
        public var minimumLogBytes: Int
        /// The largest message of a snapshot: a larger snapshot is written in parts of this
        /// size (a NATS message cannot exceed the servers' `max_payload`).
        public var maximumPartBytes: Int
        /// What the log since the last snapshot must weigh against it before the next: 1 where a
        /// logged byte costs a new owner about what a snapshot's byte does (a channel
        /// partition's batches and tables); less where the log's bytes cost more to apply than
        /// the snapshot's to restore, so the tail a new owner applies stays short.
        public var logShareOfSnapshot: Double
        /// The log since the last snapshot never needs more than this before the next (the
        /// minimum still first): where a logged byte costs a new owner more the larger the
        /// partition (a registry partition's random inserts into a larger file), a share alone
        /// lets the tail's time grow faster than the state.
        public var maximumLogBytes: Int

        /// - Parameters:
        ///   - minimumLogBytes: default 256 KiB: replaying that much takes milliseconds.
        ///   - maximumPartBytes: default 1 MiB less room for headers, the servers' default
        ///     `max_payload`; the store lowers it to what its servers announce.
        ///   - logShareOfSnapshot: default 1, the log weighing as much as the snapshot.
        ///   - maximumLogBytes: default none, the share alone.
        public init(minimumLogBytes: Int = 256 * 1_024, maximumPartBytes: Int = 1_048_576 - 4_096, logShareOfSnapshot: Double = 1,
                    maximumLogBytes: Int = .max) {
            self.minimumLogBytes = minimumLogBytes
            self.maximumPartBytes = maximumPartBytes
            self.logShareOfSnapshot = logShareOfSnapshot
            self.maximumLogBytes = maximumLogBytes
        }
    }

    public let settings: Settings
    private var loggedSinceSnapshot: [Int: Int] = [:]
    private var lastSnapshotSize: [Int: Int] = [:]

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// A batch of `bytes` was logged to (or read from) `partition`'s log after its last snapshot.
    public mutating func logged(_ bytes: Int, to partition: Int) {
        loggedSinceSnapshot[partition, default: 0] += bytes
    }

    /// A snapshot of `bytes` was logged to (or read from) `partition`'s log: what came before it
    /// no longer needs replaying.
    public mutating func snapshotted(_ bytes: Int, partition: Int) {
        loggedSinceSnapshot[partition] = 0
        lastSnapshotSize[partition] = bytes
    }

    /// The store no longer holds `partition` (it was given up): it starts over when read again.
    public mutating func forget(_ partition: Int) {
        loggedSinceSnapshot[partition] = nil
        lastSnapshotSize[partition] = nil
    }

    /// Whether `partition` should get a snapshot now.
    public func isDue(_ partition: Int) -> Bool {
        let logged = loggedSinceSnapshot[partition] ?? 0
        let share = Int((Double(lastSnapshotSize[partition] ?? 0) * settings.logShareOfSnapshot).rounded(.up))
        return logged > 0 && logged >= max(settings.minimumLogBytes, min(share, settings.maximumLogBytes))
    }
}
