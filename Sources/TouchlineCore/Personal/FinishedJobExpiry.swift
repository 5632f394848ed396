/// When the finished jobs of a cluster leave its job bucket (docs/cluster.md, "Finished jobs
/// expire"), so the bucket and every gateway's memory hold the jobs of one retention period,
/// not of the whole season.
///
/// A finished job's entry (its final counts and its idempotent answer) stays ``retention``
/// after the job finished. Then the sweeper, the gateway holding partition 0, writes a deletion
/// marker over it under that partition's fence; every gateway's watch sees the marker and
/// forgets the job. A sweep later, once every watch has had a sweep's time to pass it, the
/// sweeper purges the job's keys from the bucket, the marker and those its slices left with
/// them. A gateway that is not the sweeper forgets the markers it saw two sweeps ago: by then
/// the sweeper has purged them (a marker whose purge failed is seen again by the next watch
/// that starts, and purged then).
///
/// A value type with no I/O: the gateway tells it what the watch showed and asks it, at each
/// sweep, what to write.
public struct FinishedJobExpiry: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Write a deletion marker over the job's entry.
        case remove(jobID: String)
        /// Purge every key of the job from the bucket.
        case purge(jobID: String)
    }

    public let retention: Duration
    /// How often the gateway sweeps: a quarter of the retention, from 1 s to a minute.
    public let sweepInterval: Duration
    private var finishedAt: [String: UnixTime] = [:]
    /// Markers seen on the watch, and when.
    private var removedAt: [String: UnixTime] = [:]
    /// Markers written and not seen yet: not written again meanwhile.
    private var removing: Set<String> = []

    public init(retention: Duration) {
        self.retention = retention
        sweepInterval = min(max(retention / 4, .seconds(1)), .seconds(60))
    }

    /// The watch showed the job's final entry.
    public mutating func finished(_ jobID: String, at time: UnixTime) {
        guard removedAt[jobID] == nil else { return }
        finishedAt[jobID] = time
    }

    /// The watch showed a deletion marker over the job's entry, at `time` by this gateway's clock.
    public mutating func removed(_ jobID: String, seenAt time: UnixTime) {
        finishedAt[jobID] = nil
        removing.remove(jobID)
        removedAt[jobID] = time
    }

    /// Writing the job's marker failed: the next sweep writes it again.
    public mutating func removeFailed(_ jobID: String) { removing.remove(jobID) }

    /// What to write now: nothing unless this gateway is the sweeper (`isSweeper`). Markers
    /// this gateway will not purge are forgotten after two sweeps.
    public mutating func sweep(at now: UnixTime, isSweeper: Bool) -> [Action] {
        guard isSweeper else {
            removedAt = removedAt.filter { now - $0.value < sweepInterval * 2 }
            return []
        }
        let due = finishedAt.filter { now - $0.value >= retention && !removing.contains($0.key) }.keys.sorted()
        removing.formUnion(due)
        let purgeable = removedAt.filter { now - $0.value >= sweepInterval }.keys.sorted()
        for jobID in purgeable { removedAt[jobID] = nil }
        return due.map { .remove(jobID: $0) } + purgeable.map { .purge(jobID: $0) }
    }

    /// Jobs finished and not yet removed (memory figures and tests).
    public var finishedCount: Int { finishedAt.count }
    /// Markers remembered until their purge.
    public var removedCount: Int { removedAt.count }
}
