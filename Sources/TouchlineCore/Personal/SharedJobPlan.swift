/// Which slices of the cluster's personal jobs this gateway runs, stops and finishes: the pure
/// core of personal jobs spread over gateways (docs/cluster.md, "Personal jobs on the cluster").
///
/// Every gateway sees the same job bucket (its watch feeds ``jobChanged(_:_:)`` and
/// ``sliceChanged(_:_:)``) and is told which partitions it owns. A slice runs where its
/// partition is owned (``partition(of:)``), so the partition leases decide
/// who runs it: one gateway at a time, balanced, taken over within the lease's time when a
/// gateway dies, and stopped before another may start it. The owner of a job's first slice
/// finishes the job once every slice has finished. The plan does no I/O: ``decide(at:)`` returns
/// what to start, stop and finish, and the shell reports back what it did.
///
/// A **scheduled** job (a kickoff with `at`) runs no slice before its start is recorded in the
/// bucket: at its time, the owner of its first slice records it (``Action/recordStart(jobID:)``).
/// A cancellation recorded before the start withdraws the job instead: nothing of it is sent,
/// and the first slice's owner closes it (``Action/withdraw(jobID:)``). Which came first is
/// the bucket's order (the revisions), the same on every gateway, so a scheduled job is either
/// sent or cancelled, never both, whichever gateways race to start and cancel it.
public struct SharedJobPlan: Sendable {
    /// One slice of one job.
    public struct SliceKey: Hashable, Sendable, Comparable, CustomStringConvertible {
        public let jobID: String
        public let slice: AudienceSlice

        public init(jobID: String, slice: AudienceSlice) {
            self.jobID = jobID
            self.slice = slice
        }

        public static func < (a: SliceKey, b: SliceKey) -> Bool {
            (a.jobID, a.slice.index) < (b.jobID, b.slice.index)
        }

        public var description: String { "\(jobID) \(slice)" }
    }

    /// What the bucket says of a job.
    public struct JobState: Sendable, Equatable {
        /// Slices it is cut in.
        public var sliceCount: Int
        /// Its final counts are written: nothing of it runs any more.
        public var isFinished: Bool
        /// When a scheduled job may start; nil: at once.
        public var startAt: UnixTime?
        /// Cut on a partitioned registry's partitions: slice i runs where registry partition i
        /// is owned, which holds its tokens (``AudienceSlice/registryPartition``). Otherwise its
        /// slices spread from the job's own partition (``AudienceSlice/partition(ofJob:in:)``).
        public var slicesFollowRegistry: Bool

        public init(sliceCount: Int, isFinished: Bool, startAt: UnixTime? = nil, slicesFollowRegistry: Bool = false) {
            self.sliceCount = sliceCount
            self.isFinished = isFinished
            self.startAt = startAt
            self.slicesFollowRegistry = slicesFollowRegistry
        }
    }

    /// Where a scheduled job stands.
    public enum Schedule: Sendable, Equatable {
        /// Not started yet: it starts at this time unless it is cancelled first.
        case waiting(UnixTime)
        /// Its start is recorded: its slices run.
        case started
        /// A cancellation was recorded before its start: nothing of it is ever sent.
        case withdrawn
    }

    /// What the bucket says of a slice: its last saved progress.
    public struct SliceState: Sendable, Equatable {
        public var counters: FanOutCounters
        public var isFinished: Bool

        public init(counters: FanOutCounters, isFinished: Bool) {
            self.counters = counters
            self.isFinished = isFinished
        }
    }

    public enum Action: Sendable, Equatable {
        /// Run the slice from its last saved progress (none: from its start).
        case run(SliceKey)
        /// Stop running the slice at once: its partition is no longer this gateway's.
        case stop(SliceKey)
        /// Write the job's final counts (the sum of its slices').
        case finish(jobID: String, counters: FanOutCounters)
        /// Record the scheduled job's start (its time has come; no cancellation is known).
        case recordStart(jobID: String)
        /// Close the withdrawn job: final counts of nothing sent, marked cancelled.
        case withdraw(jobID: String)
    }

    public let partitioning: ChannelPartitioning
    private var jobs: [String: JobState] = [:]
    private var slices: [SliceKey: SliceState] = [:]
    private var owned: Set<Int> = []
    /// Slices this plan has started here and not seen end or stop.
    public private(set) var running: Set<SliceKey> = []
    private var finishing: Set<String> = []
    /// Bucket revisions of the scheduled jobs' recorded starts and first cancellations.
    private var startRevisions: [String: UInt64] = [:]
    private var cancellationRevisions: [String: UInt64] = [:]
    /// Scheduled jobs whose start this plan asked to record and has not seen recorded.
    private var starting: Set<String> = []

    public init(partitioning: ChannelPartitioning) {
        self.partitioning = partitioning
    }

    // MARK: Inputs

    /// The job's entry changed (nil: removed from the bucket).
    public mutating func jobChanged(_ jobID: String, _ state: JobState?) {
        jobs[jobID] = state
        if state?.isFinished ?? true {
            finishing.remove(jobID)
            starting.remove(jobID)
            // A finished job keeps no slices in memory: its counts are in its own entry.
            slices = slices.filter { $0.key.jobID != jobID }
            startRevisions[jobID] = nil
            cancellationRevisions[jobID] = nil
        }
    }

    /// The bucket holds the job's recorded start at `revision`.
    public mutating func startRecorded(_ jobID: String, revision: UInt64) {
        starting.remove(jobID)
        guard jobs[jobID]?.isFinished != true else { return }
        startRevisions[jobID] = min(revision, startRevisions[jobID] ?? .max)
    }

    /// The bucket holds a cancellation of the job at `revision` (the provider's, or its
    /// kickoff's channel ending): it withdraws a scheduled job if it came before the start.
    public mutating func cancellationRecorded(_ jobID: String, revision: UInt64) {
        guard jobs[jobID]?.isFinished != true else { return }
        cancellationRevisions[jobID] = min(revision, cancellationRevisions[jobID] ?? .max)
    }

    /// Recording a scheduled job's start failed: the next ``decide(at:)`` asks again.
    public mutating func recordStartFailed(_ jobID: String) { starting.remove(jobID) }

    /// A slice's saved progress changed.
    public mutating func sliceChanged(_ key: SliceKey, _ state: SliceState) {
        guard jobs[key.jobID]?.isFinished != true else { return }
        slices[key] = state
    }

    /// The partitions whose leases this gateway holds now.
    public mutating func ownedPartitionsChanged(_ partitions: Set<Int>) { owned = partitions }

    /// A slice run ended here (it finished, or was stopped): the plan may start it again.
    public mutating func runEnded(_ key: SliceKey) { running.remove(key) }

    /// Writing a job's final counts failed: the next ``decide(at:)`` asks again.
    public mutating func finishFailed(_ jobID: String) { finishing.remove(jobID) }

    // MARK: Decisions

    /// What to do at `now`, in a stable order (stops first, then runs and finishes by job id).
    public mutating func decide(at now: UnixTime) -> [Action] {
        var actions: [Action] = []
        // A finished slice stays running until its run reports its end (``runEnded(_:)``).
        for key in running.sorted() where !isOwned(key) {
            running.remove(key)
            actions.append(.stop(key))
        }
        for (jobID, job) in jobs.sorted(by: { $0.key < $1.key }) where !job.isFinished {
            switch schedule(of: jobID) {
            case .waiting(let at):
                if at <= now, !starting.contains(jobID), ownsFirstSlice(of: jobID) {
                    starting.insert(jobID)
                    actions.append(.recordStart(jobID: jobID))
                }
                continue
            case .withdrawn:
                if !finishing.contains(jobID), ownsFirstSlice(of: jobID) {
                    finishing.insert(jobID)
                    actions.append(.withdraw(jobID: jobID))
                }
                continue
            case .started, nil: break
            }
            let cut = AudienceSlice.all(count: job.sliceCount)
            for slice in cut {
                let key = SliceKey(jobID: jobID, slice: slice)
                if !running.contains(key), shouldRun(key) {
                    running.insert(key)
                    actions.append(.run(key))
                }
            }
            guard !finishing.contains(jobID), ownsFirstSlice(of: jobID), let counters = finalCounters(jobID, cut) else { continue }
            finishing.insert(jobID)
            actions.append(.finish(jobID: jobID, counters: counters))
        }
        return actions
    }

    /// Where the open scheduled job `jobID` stands; nil for a job that starts at once, a
    /// finished one, or one the plan does not know.
    public func schedule(of jobID: String) -> Schedule? {
        guard let job = jobs[jobID], !job.isFinished, let startAt = job.startAt else { return nil }
        let start = startRevisions[jobID] ?? .max, cancellation = cancellationRevisions[jobID] ?? .max
        if cancellation < start { return .withdrawn }
        return start < .max ? .started : .waiting(startAt)
    }

    /// When the earliest scheduled job whose start this gateway records falls due (the shell
    /// arms a timer for it).
    public var nextStart: UnixTime? {
        jobs.keys.compactMap { jobID -> UnixTime? in
            guard case .waiting(let at) = schedule(of: jobID), !starting.contains(jobID), ownsFirstSlice(of: jobID) else { return nil }
            return at
        }.min()
    }

    /// The job's counts as the bucket shows them now: its slices' saved progress summed, or
    /// nil if the plan knows no such job. `isFinished` once every slice has finished.
    public func progress(of jobID: String) -> (counters: FanOutCounters, slicesFinished: Int, slices: Int)? {
        guard let job = jobs[jobID] else { return nil }
        var total = FanOutCounters(), finished = 0
        for slice in AudienceSlice.all(count: job.sliceCount) {
            guard let state = slices[SliceKey(jobID: jobID, slice: slice)] else { continue }
            total.add(state.counters)
            if state.isFinished { finished += 1 }
        }
        return (total, finished, job.sliceCount)
    }

    /// The partition whose owner runs `key`: its registry partition when its job is cut on
    /// them, else the one its place in the job's spread gives.
    public func partition(of key: SliceKey) -> Int {
        if jobs[key.jobID]?.slicesFollowRegistry == true, key.slice.count == partitioning.count { return key.slice.registryPartition }
        return key.slice.partition(ofJob: key.jobID, in: partitioning)
    }

    /// The owner of a job's first slice records its start and finishes it.
    private func ownsFirstSlice(of jobID: String) -> Bool {
        owned.contains(partitioning.partition(of: jobID))
    }

    private func shouldRun(_ key: SliceKey) -> Bool {
        slices[key]?.isFinished != true && isOwned(key)
    }

    /// The slice's job is open and its partition this gateway's.
    private func isOwned(_ key: SliceKey) -> Bool {
        guard let job = jobs[key.jobID], !job.isFinished else { return false }
        return owned.contains(partition(of: key))
    }

    private func finalCounters(_ jobID: String, _ cut: [AudienceSlice]) -> FanOutCounters? {
        var total = FanOutCounters()
        for slice in cut {
            guard let state = slices[SliceKey(jobID: jobID, slice: slice)], state.isFinished else { return nil }
            total.add(state.counters)
        }
        return total
    }
}

extension FanOutCounters {
    /// Adds another share's counts (a job's slices summed).
    public mutating func add(_ other: FanOutCounters) {
        targeted += other.targeted
        sent += other.sent
        deadLettered += other.deadLettered
        expired += other.expired
        retries += other.retries
        failedByReason.merge(other.failedByReason, uniquingKeysWith: +)
    }
}
