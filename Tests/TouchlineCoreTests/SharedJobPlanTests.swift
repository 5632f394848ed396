import Testing
import TouchlineCore

/// Personal jobs spread over a cluster's gateways: the audience cut in slices by token, each
/// slice run where its partition is owned, a job finished once by its first slice's owner, and a
/// slice's whole checkpoint resuming it as the folded saves would.
@Suite("Shared personal jobs")
struct SharedJobPlanTests {
    static let partitioning = ChannelPartitioning(count: 8)!
    static let now = UnixTime(seconds: 1_800_000_000)

    /// Random-looking lowercase hex tokens of APNs' length, `count` of them.
    static func tokens(_ count: Int, seed: UInt64 = 7) -> [String] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in (0..<4).map { _ in String(random.next(), radix: 16).leftPadded(to: 16) }.joined() }
    }

    @Test func sixteenSlicesHoldEveryTokenOnceAndWalkInTokenOrder() {
        let tokens = Self.tokens(5_000).sorted()
        let slices = AudienceSlice.all(count: AudienceSlice.hexDigitCount)
        for token in tokens { #expect(slices.count { $0.contains(token) } == 1, "\(token)") }
        // Walking a slice from its start cursor up to its bound yields exactly its tokens.
        for slice in slices {
            let walked = tokens.filter { token in slice.startCursor.map { token > $0 } ?? true }.prefix { token in slice.upperBound.map { token < $0 } ?? true }
            #expect(Array(walked) == tokens.filter(slice.contains), "\(slice)")
            #expect(walked.count > 5_000 / 16 / 2, "\(slice) holds \(walked.count) tokens: slices are even")
        }
        #expect(AudienceSlice(index: 0, count: 1)!.contains(tokens[0]) && AudienceSlice(index: 0, count: 1)!.startCursor == nil)
        #expect(AudienceSlice(index: 4, count: 4) == nil && AudienceSlice(index: 16, count: 16) == nil && AudienceSlice(index: 0, count: 1_025) == nil)
        // Cut in 16, a slice holds the tokens of its first digit, as the slices of jobs stored
        // before the cut followed the registry's partitions did.
        for slice in slices {
            let digit = String(slice.index, radix: 16)
            #expect(tokens.filter(slice.contains) == tokens.filter { $0.hasPrefix(digit) }, "\(slice)")
        }
    }

    @Test(arguments: [8, 16, 64, 100])
    func slicesCutOnTheRegistrysPartitionsHoldTheirPartitionsTokens(partitions: Int) {
        let registry = TokenPartitioning(ChannelPartitioning(count: partitions)!)
        for token in Self.tokens(3_000) {
            let holders = AudienceSlice.all(count: partitions).filter { $0.contains(token) }
            #expect(holders.map(\.registryPartition) == [registry.partition(ofToken: token)], "\(token)")
        }
    }

    @Test func aJobsSlicesGoToConsecutivePartitions() {
        let partitions = AudienceSlice.all(count: 16).map { $0.partition(ofJob: "job-a", in: Self.partitioning) }
        #expect(Set(partitions).count == Self.partitioning.count, "every partition (and so every owner) takes a share")
        let first = Self.partitioning.partition(of: "job-a")
        #expect(partitions[0] == first && partitions[1] == (first + 1) % 8)
    }

    @Test func slicesRunWhereTheirPartitionIsOwnedAndStopWhenItIsLost() {
        var plan = SharedJobPlan(partitioning: Self.partitioning)
        plan.jobChanged("job-a", .init(sliceCount: 16, isFinished: false))
        #expect(plan.decide(at: Self.now).isEmpty, "nothing is owned yet")
        let home = Self.partitioning.partition(of: "job-a")
        plan.ownedPartitionsChanged([home])
        let runs = plan.decide(at: Self.now)
        // Partition `home` holds slices 0 and 8 of 16 over 8 partitions.
        #expect(runs == [.run(key(0)), .run(key(8))])
        #expect(plan.decide(at: Self.now).isEmpty, "a running slice is not started twice")
        plan.ownedPartitionsChanged([(home + 1) % 8])
        #expect(plan.decide(at: Self.now) == [.stop(key(0)), .stop(key(8)), .run(key(1)), .run(key(9))])
        // A stopped slice is started again from its saved progress when the partition returns.
        plan.ownedPartitionsChanged([home, (home + 1) % 8])
        #expect(plan.decide(at: Self.now) == [.run(key(0)), .run(key(8))])
    }

    @Test func theFirstSlicesOwnerFinishesTheJobOnceEverySliceHasFinished() {
        var home = SharedJobPlan(partitioning: Self.partitioning), other = home
        let homePartition = Self.partitioning.partition(of: "job-a")
        home.ownedPartitionsChanged([homePartition])
        other.ownedPartitionsChanged(Set(0..<8).subtracting([homePartition]))
        for plan in [0, 1] {
            var copy = plan == 0 ? home : other
            copy.jobChanged("job-a", .init(sliceCount: 16, isFinished: false))
            if plan == 0 { home = copy } else { other = copy }
        }
        _ = home.decide(at: Self.now); _ = other.decide(at: Self.now)
        var counters = FanOutCounters()
        counters.targeted = 10; counters.sent = 9; counters.deadLettered = 1; counters.failedByReason = ["BadDeviceToken": 1]
        // Each slice's run saves it finished, then reports its end (the shell's order).
        for index in 0..<15 {
            home.sliceChanged(key(index), .init(counters: counters, isFinished: true))
            other.sliceChanged(key(index), .init(counters: counters, isFinished: true))
            home.runEnded(key(index))
            other.runEnded(key(index))
        }
        #expect(home.decide(at: Self.now).isEmpty && other.decide(at: Self.now).isEmpty, "slice 15 has not finished")
        home.sliceChanged(key(15), .init(counters: counters, isFinished: true))
        other.sliceChanged(key(15), .init(counters: counters, isFinished: true))
        home.runEnded(key(15))
        other.runEnded(key(15))
        var total = FanOutCounters()
        total.targeted = 160; total.sent = 144; total.deadLettered = 16; total.failedByReason = ["BadDeviceToken": 16]
        #expect(other.decide(at: Self.now).isEmpty, "only the first slice's owner finishes the job")
        #expect(home.decide(at: Self.now) == [.finish(jobID: "job-a", counters: total)])
        #expect(home.decide(at: Self.now).isEmpty, "asked once while the write is out")
        home.finishFailed("job-a")
        #expect(home.decide(at: Self.now) == [.finish(jobID: "job-a", counters: total)], "asked again after a failed write")
        home.jobChanged("job-a", .init(sliceCount: 16, isFinished: true))
        #expect(home.decide(at: Self.now).isEmpty && home.progress(of: "job-a")?.slicesFinished == 0, "a finished job holds no slices")
    }

    @Test func progressSumsTheSlicesSavedSoFar() {
        var plan = SharedJobPlan(partitioning: Self.partitioning)
        plan.jobChanged("job-b", .init(sliceCount: 16, isFinished: false))
        var counters = FanOutCounters()
        counters.targeted = 5; counters.sent = 2
        plan.sliceChanged(SharedJobPlan.SliceKey(jobID: "job-b", slice: AudienceSlice(index: 2, count: 16)!), .init(counters: counters, isFinished: false))
        plan.sliceChanged(SharedJobPlan.SliceKey(jobID: "job-b", slice: AudienceSlice(index: 4, count: 16)!), .init(counters: counters, isFinished: true))
        let progress = plan.progress(of: "job-b")
        #expect(progress?.counters.targeted == 10 && progress?.counters.sent == 4 && progress?.counters.pending == 6)
        #expect(progress?.slicesFinished == 1 && progress?.slices == 16)
        #expect(plan.progress(of: "job-unknown") == nil)
    }

    /// Two gateways, each told a different half of the partitions: every slice of every job
    /// runs on exactly one of them.
    @Test func disjointOwnersRunEverySliceExactlyOnce() {
        var a = SharedJobPlan(partitioning: Self.partitioning), b = a
        a.ownedPartitionsChanged([0, 2, 4, 6])
        b.ownedPartitionsChanged([1, 3, 5, 7])
        let jobs = (0..<20).map { "job-\($0)" }
        for job in jobs {
            a.jobChanged(job, .init(sliceCount: job == "job-7" ? 1 : 16, isFinished: false))
            b.jobChanged(job, .init(sliceCount: job == "job-7" ? 1 : 16, isFinished: false))
        }
        let runs = (a.decide(at: Self.now) + b.decide(at: Self.now)).compactMap { action -> SharedJobPlan.SliceKey? in
            if case .run(let key) = action { key } else { nil }
        }
        #expect(runs.count == 19 * 16 + 1 && Set(runs).count == runs.count)
    }

    /// Two gateways' plans: `first` owns the job's first slice's partition, `other` the rest;
    /// both know the job, scheduled for `at`.
    static func twoGateways(scheduling jobID: String, at: UnixTime) -> (first: SharedJobPlan, other: SharedJobPlan) {
        let home = partitioning.partition(of: jobID)
        var first = SharedJobPlan(partitioning: partitioning), other = first
        first.ownedPartitionsChanged([home])
        other.ownedPartitionsChanged(Set(0..<8).subtracting([home]))
        first.jobChanged(jobID, .init(sliceCount: 16, isFinished: false, startAt: at))
        other.jobChanged(jobID, .init(sliceCount: 16, isFinished: false, startAt: at))
        return (first, other)
    }

    /// A scheduled kickoff on two gateways: nothing runs before its time; then only the first
    /// slice's owner records the start, and slices run everywhere once the bucket shows it.
    @Test func aScheduledJobRunsNoSliceBeforeItsStartIsRecorded() {
        let at = Self.now + .seconds(600)
        var (first, other) = Self.twoGateways(scheduling: "job-a", at: at)
        #expect(first.decide(at: Self.now).isEmpty && other.decide(at: Self.now).isEmpty, "it waits for its time")
        #expect(first.schedule(of: "job-a") == .waiting(at) && first.nextStart == at)
        #expect(other.nextStart == nil, "only the first slice's owner arms a timer for it")
        #expect(first.decide(at: at - .milliseconds(1)).isEmpty)
        #expect(first.decide(at: at) == [.recordStart(jobID: "job-a")])
        #expect(first.decide(at: at + .seconds(1)).isEmpty && first.nextStart == nil, "asked once while the write is out")
        #expect(other.decide(at: at + .seconds(1)).isEmpty, "no gateway runs a slice before the start is recorded")
        first.recordStartFailed("job-a")
        #expect(first.decide(at: at + .seconds(2)) == [.recordStart(jobID: "job-a")], "asked again after a failed write")
        first.startRecorded("job-a", revision: 40)
        other.startRecorded("job-a", revision: 40)
        #expect(first.schedule(of: "job-a") == .started)
        #expect(first.decide(at: at + .seconds(2)) == [.run(key(0)), .run(key(8))])
        #expect(other.decide(at: at + .seconds(2)).count == 14, "the other fourteen slices")
        // A cancellation after the start changes nothing of the schedule (it expires what is left).
        other.cancellationRecorded("job-a", revision: 41)
        #expect(other.schedule(of: "job-a") == .started)
    }

    /// A cancellation recorded before the start withdraws the job on every gateway, even when
    /// a start is recorded after it (two gateways raced): the bucket's order decides.
    @Test func aCancellationBeforeTheStartWithdrawsTheJobWhateverComesAfter() {
        let at = Self.now + .seconds(60)
        var (first, other) = Self.twoGateways(scheduling: "job-a", at: at)
        #expect(first.decide(at: at) == [.recordStart(jobID: "job-a")])
        // The provider's cancel reached the bucket first (revision 30), the start second (31).
        for index in 0..<2 {
            var plan = index == 0 ? first : other
            plan.cancellationRecorded("job-a", revision: 30)
            plan.startRecorded("job-a", revision: 31)
            #expect(plan.schedule(of: "job-a") == .withdrawn)
            if index == 0 { first = plan } else { other = plan }
        }
        #expect(other.decide(at: at + .seconds(1)).isEmpty, "no slice runs, and only the first slice's owner closes it")
        #expect(first.decide(at: at + .seconds(1)) == [.withdraw(jobID: "job-a")])
        #expect(first.decide(at: at + .seconds(2)).isEmpty, "asked once while the write is out")
        first.finishFailed("job-a")
        #expect(first.decide(at: at + .seconds(3)) == [.withdraw(jobID: "job-a")])
        first.jobChanged("job-a", .init(sliceCount: 16, isFinished: true, startAt: at))
        #expect(first.schedule(of: "job-a") == nil && first.decide(at: at + .seconds(4)).isEmpty)
        // Revisions, not arrival: a start at a lower revision than the cancellation wins.
        var plan = SharedJobPlan(partitioning: Self.partitioning)
        plan.jobChanged("job-b", .init(sliceCount: 1, isFinished: false, startAt: at))
        plan.startRecorded("job-b", revision: 7)
        plan.cancellationRecorded("job-b", revision: 9)
        #expect(plan.schedule(of: "job-b") == .started)
        #expect(plan.schedule(of: "job-unknown") == nil)
    }

    /// A job taken over: the first slice's partition moves, and its new owner records the start.
    @Test func theFirstSlicesNewOwnerRecordsAStartTheOldOneDidNot() {
        let home = Self.partitioning.partition(of: "job-a")
        var plan = SharedJobPlan(partitioning: Self.partitioning)
        let at = Self.now + .seconds(5)
        plan.jobChanged("job-a", .init(sliceCount: 16, isFinished: false, startAt: at))
        plan.ownedPartitionsChanged([(home + 1) % 8])
        #expect(plan.decide(at: at + .seconds(30)).isEmpty && plan.nextStart == nil)
        plan.ownedPartitionsChanged([home, (home + 1) % 8])
        #expect(plan.nextStart == at, "a start past due is due at once")
        #expect(plan.decide(at: at + .seconds(31)) == [.recordStart(jobID: "job-a")])
    }

    /// A slice saved as one whole checkpoint, resumed by another job value: every token ends
    /// once, those that ended before the save are not sent again, and a target awaiting its
    /// retry keeps its attempts.
    @Test func aSliceResumesFromItsWholeCheckpoint() {
        let slice = AudienceSlice(index: 5, count: 16)!
        let audience = Self.tokens(2_000, seed: 11).sorted()
        let mine = audience.filter(slice.contains)
        func page(after cursor: String?, limit: Int) -> (tokens: [String], exhausted: Bool) {
            // What the registry returns after the cursor, cut at the slice's bound.
            let after = audience.filter { token in cursor.map { token > $0 } ?? true }.prefix(limit)
            let inside = after.prefix { token in slice.upperBound.map { token < $0 } ?? true }
            return (Array(inside), inside.count < after.count || after.count < limit)
        }
        let start = FanOutCheckpoint(cursor: slice.startCursor, counters: FanOutCounters(), pending: [], endedAfterCursor: [])
        var job = FanOutJob(payload: [1], limits: .init(window: 64, maxInFlight: 8, pageSize: 16), seed: 1, checkpoint: start)
        var now = UnixTime(seconds: 1_000)
        var sentBefore: [String] = []
        // Run until about half the slice is sent; the second token always asks for a retry first.
        var actions = job.nextSends(now: now)
        while sentBefore.count < mine.count / 2 {
            var next: [FanOutJob.Action] = []
            for action in actions {
                switch action {
                case .fetchTargets(let cursor, let limit):
                    let fetched = page(after: cursor, limit: limit)
                    job.targetsFetched(fetched.tokens, exhausted: fetched.exhausted, now: now)
                case .send(let token, let attempt, let target):
                    let result: PersonalOutcome = token == mine[1] && attempt == 1 ? .retryLater : .accepted
                    next += job.outcome(of: target, result: result, now: now)
                    if result == .accepted { sentBefore.append(token) }
                default: break
                }
            }
            now = now + .milliseconds(1)
            actions = next + job.nextSends(now: now)
        }
        let checkpoint = job.takeCheckpoint()
        #expect(checkpoint.pending.map(\.token) == [mine[1]] && checkpoint.pending.first?.attempts == 1)
        let savedSent = checkpoint.counters.sent

        var resumed = FanOutJob(payload: [1], limits: .init(window: 64, maxInFlight: 8, pageSize: 16), seed: 2, checkpoint: checkpoint)
        var sentAfter: [String] = []
        now = now + .seconds(60)
        actions = resumed.nextSends(now: now)
        while !resumed.isFinished {
            var next: [FanOutJob.Action] = []
            for action in actions {
                switch action {
                case .fetchTargets(let cursor, let limit):
                    let fetched = page(after: cursor, limit: limit)
                    resumed.targetsFetched(fetched.tokens, exhausted: fetched.exhausted, now: now)
                case .send(let token, _, let target):
                    next += resumed.outcome(of: target, result: .accepted, now: now)
                    sentAfter.append(token)
                default: break
                }
            }
            now = now + .milliseconds(1)
            actions = next + resumed.nextSends(now: now)
        }
        #expect(Set(sentBefore + sentAfter) == Set(mine), "every token of the slice, and none outside it")
        #expect(resumed.counters.sent == mine.count && resumed.counters.targeted == mine.count)
        // Only what ended after the checkpoint's settled cursor may go twice: here nothing was in flight.
        let twice = sentBefore.count + sentAfter.count - mine.count
        #expect(twice == sentBefore.count - savedSent, "\(twice) sent twice, \(sentBefore.count - savedSent) unsaved")
    }

    private func key(_ index: Int) -> SharedJobPlan.SliceKey {
        SharedJobPlan.SliceKey(jobID: "job-a", slice: AudienceSlice(index: index, count: 16)!)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
