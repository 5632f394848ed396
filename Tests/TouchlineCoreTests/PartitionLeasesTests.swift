import Testing
import TouchlineCore

/// One instance's lease machine, input by input, in virtual time: what each observation,
/// outcome and tick does.
@Suite("Partition leases")
struct PartitionLeasesTests {
    typealias Action = PartitionLeases.Action

    /// Plays the shell around one machine: keeps its clock, hands out revisions.
    struct Machine {
        static let origin = ContinuousClock.now
        var leases: PartitionLeases
        var now = origin
        private var lastRevision: UInt64 = 100

        init(_ name: String = "b", partitions: Int = 1, incarnation: UInt64 = 7) throws {
            leases = PartitionLeases(instance: try id(name), incarnation: incarnation,
                                     settings: try LeaseSettings(partitionCount: partitions), now: Self.origin)
        }

        var settings: LeaseSettings { leases.settings }
        var elapsed: Duration { now - Self.origin }

        mutating func handle(_ input: PartitionLeases.Input) -> [Action] { leases.handle(input, now: now) }

        /// Moves the clock on and ticks.
        mutating func tick(after duration: Duration) -> [Action] {
            now += duration
            return handle(.tick)
        }

        mutating func nextRevision() -> Revision {
            lastRevision += 1
            return Revision(lastRevision)
        }

        /// Answers `write` as stored with the next revision.
        mutating func store(_ write: BucketWrite) -> [Action] {
            let revision = nextRevision()
            return handle(.completed(write, .stored(revision)))
        }

        /// Answers every write in `actions` as stored, and returns what that led to.
        mutating func storeAll(_ actions: [Action]) -> [Action] {
            writes(actions).flatMap { store($0) }
        }

        mutating func observe(_ key: LeaseKey, _ value: PartitionLeases.ObservedValue) -> [Action] {
            let revision = nextRevision()
            return handle(.observed(key, revision: revision, value: value))
        }

        /// Caught up, heartbeat stored: returns the acquisitions that follow.
        mutating func join() -> [Action] {
            let heartbeat = handle(.caughtUp)
            return storeAll(heartbeat)
        }

        /// Joined and every partition acquired.
        static func owning(partitions: Int) throws -> Machine {
            var machine = try Machine(partitions: partitions)
            _ = machine.storeAll(machine.join())
            #expect(machine.leases.ownedPartitions.count == partitions)
            return machine
        }
    }

    static func id(_ name: String) throws -> InstanceID { try #require(InstanceID(name)) }

    static func writes(_ actions: [Action]) -> [BucketWrite] {
        actions.compactMap { if case .write(let write) = $0 { write } else { nil } }
    }

    static func record(_ holder: String, incarnation: UInt64 = 1, write: UInt64 = 1,
                       ttl: Duration = .seconds(3)) throws -> PartitionLeases.ObservedValue {
        .record(LeaseRecord(holder: try id(holder), incarnation: incarnation, write: BucketWrite.ID(sequence: write), ttl: ttl))
    }

    /// A record of the machine's own run; the default settings give leases and heartbeats alike 3 s.
    static func ownRecord(_ write: UInt64, incarnation: UInt64 = 7) throws -> LeaseRecord {
        LeaseRecord(holder: try id("b"), incarnation: incarnation, write: BucketWrite.ID(sequence: write), ttl: .seconds(3))
    }

    // MARK: Joining

    @Test func nothingIsWrittenBeforeTheWatchCaughtUpAndTheHeartbeatComesFirst() throws {
        var machine = try Machine(partitions: 2)
        #expect(machine.tick(after: .seconds(5)).isEmpty)
        #expect(machine.observe(.partition(0), try Self.record("a")).isEmpty)
        #expect(machine.leases.nextTick == nil && machine.leases.phase == .joining)
        let heartbeat = machine.handle(.caughtUp)
        #expect(heartbeat == [.write(BucketWrite(id: BucketWrite.ID(sequence: 1), key: .member(try Self.id("b")),
                                                 change: .create(try Self.ownRecord(1))))])
        #expect(machine.tick(after: .milliseconds(100)).isEmpty, "acquired before its heartbeat was stored")
        let acquisitions = Self.writes(machine.storeAll(heartbeat))
        #expect(machine.leases.phase == .running)
        // Partition 0 is somebody's live lease; partition 1 has never been written.
        #expect(acquisitions == [BucketWrite(id: BucketWrite.ID(sequence: 2), key: .partition(1), change: .create(try Self.ownRecord(2)))])
    }

    @Test func aStoredAcquisitionGrantsThePartitionWithItsRevisionAsFence() throws {
        var machine = try Machine()
        let acquisition = try #require(Self.writes(machine.join()).first)
        #expect(machine.leases.fence(for: 0, now: machine.now) == nil)
        #expect(machine.handle(.completed(acquisition, .stored(Revision(42)))) == [.startOwning(partition: 0, fence: Fence(Revision(42)))])
        #expect(machine.leases.fence(for: 0, now: machine.now) == Fence(Revision(42)))
        #expect(machine.leases.ownedPartitions == [0])
        #expect(machine.leases.fence(for: 1, now: machine.now) == nil && machine.leases.fence(for: -1, now: machine.now) == nil)
    }

    // MARK: Holding

    @Test func theFenceLastsUntilTheLastStoredWritesSendTimePlusTTLMinusMargin() throws {
        var machine = try Machine()
        let acquisition = try #require(Self.writes(machine.join()).first)
        let sentAt = machine.now
        machine.now += .milliseconds(300)
        _ = machine.store(acquisition)
        // Renewals go out and fail from now on, up to the end (which the machine asks a tick for).
        let end = sentAt + machine.settings.leaseTTL - machine.settings.safetyMargin
        while let due = machine.leases.nextTick, due < end {
            machine.now = max(machine.now, due)
            for write in Self.writes(machine.handle(.tick)) { _ = machine.handle(.completed(write, .failed)) }
        }
        #expect(machine.leases.nextTick == end)
        #expect(machine.leases.fence(for: 0, now: end - .nanoseconds(1)) != nil)
        #expect(machine.leases.fence(for: 0, now: end) == nil)
        machine.now = end
        #expect(machine.handle(.tick).contains(.stopOwning(partition: 0)))
    }

    @Test func renewalsGoTogetherEveryRenewIntervalExpectingTheCurrentRevision() throws {
        var machine = try Machine(partitions: 2)
        let acquisitions = Self.writes(machine.join())
        #expect(acquisitions.count == 2)
        machine.now += .milliseconds(400)
        _ = machine.handle(.completed(acquisitions[0], .stored(Revision(7))))
        _ = machine.handle(.completed(acquisitions[1], .stored(Revision(9))))
        // The heartbeat is due 1 s after it was sent, the leases 1 s after theirs: one batch.
        #expect(machine.leases.nextTick == Machine.origin + .seconds(1))
        let renewals = Dictionary(uniqueKeysWithValues: Self.writes(machine.tick(after: .milliseconds(600))).map { ($0.key, $0) })
        let heartbeat = try #require(renewals[.member(try Self.id("b"))])
        let first = try #require(renewals[acquisitions[0].key])
        let second = try #require(renewals[acquisitions[1].key])
        #expect(renewals.count == 3)
        #expect(heartbeat.change == .update(try Self.ownRecord(heartbeat.id.sequence), expected: Revision(101)))
        #expect(first.change == .update(try Self.ownRecord(first.id.sequence), expected: Revision(7)))
        #expect(second.change == .update(try Self.ownRecord(second.id.sequence), expected: Revision(9)))
        #expect(machine.leases.nextTick == machine.now + machine.settings.writeTimeout)
    }

    @Test func aStoredRenewalExtendsTheFenceFromItsSendTimeAndKeepsTheGrant() throws {
        var machine = try Machine.owning(partitions: 1)
        let fence = machine.leases.fence(for: 0, now: machine.now)
        let renewal = try #require(Self.writes(machine.tick(after: .seconds(1))).last)
        let sentAt = machine.now
        machine.now += .milliseconds(400)
        #expect(machine.store(renewal).isEmpty)
        let end = sentAt + machine.settings.leaseTTL - machine.settings.safetyMargin
        #expect(machine.leases.fence(for: 0, now: end - .nanoseconds(1)) == fence)
        #expect(machine.leases.fence(for: 0, now: end) == nil)
    }

    @Test func aConflictingRenewalStopsOwningAtOnce() throws {
        var machine = try Machine.owning(partitions: 1)
        let renewal = try #require(Self.writes(machine.tick(after: .seconds(1))).last)
        #expect(machine.handle(.completed(renewal, .conflict)) == [.stopOwning(partition: 0)])
        #expect(machine.leases.fence(for: 0, now: machine.now) == nil)
        // It waits for the watch to show who wrote, not retrying the stale revision at once.
        #expect(Self.writes(machine.tick(after: .milliseconds(500))).filter { $0.key == .partition(0) }.isEmpty)
    }

    @Test func aFailedRenewalKeepsTheLeaseAndIsRetriedAfterTheRetryDelay() throws {
        var machine = try Machine.owning(partitions: 1)
        let renewal = try #require(Self.writes(machine.tick(after: .seconds(1))).last)
        #expect(machine.handle(.completed(renewal, .failed)).isEmpty)
        #expect(machine.leases.fence(for: 0, now: machine.now) != nil)
        #expect(machine.leases.nextTick == machine.now + machine.settings.retryDelay)
        let retry = Self.writes(machine.tick(after: machine.settings.retryDelay))
        #expect(retry.map(\.change) == [.update(try Self.ownRecord(renewal.id.sequence + 1), expected: Revision(102))])
    }

    @Test func anUnansweredWriteCountsAsFailedAfterTheTimeoutAndALateStoredAnswerStillGrants() throws {
        var machine = try Machine()
        let first = try #require(Self.writes(machine.join()).first)
        let sentAt = machine.now
        #expect(machine.leases.nextTick == sentAt + machine.settings.writeTimeout)
        #expect(machine.tick(after: machine.settings.writeTimeout).isEmpty)
        let second = try #require(Self.writes(machine.tick(after: machine.settings.retryDelay)).first)
        #expect(second.change == .create(try Self.ownRecord(second.id.sequence)))
        // The first create was stored after all: it grants, from its own send time.
        #expect(machine.handle(.completed(first, .stored(Revision(50)))) == [.startOwning(partition: 0, fence: Fence(Revision(50)))])
        let end = sentAt + machine.settings.leaseTTL - machine.settings.safetyMargin
        #expect(machine.leases.fence(for: 0, now: end - .nanoseconds(1)) != nil && machine.leases.fence(for: 0, now: end) == nil)
        // The second conflicts because of the first: that says nothing against the lease.
        #expect(machine.handle(.completed(second, .conflict)).isEmpty)
        #expect(machine.leases.fence(for: 0, now: machine.now) == Fence(Revision(50)))
    }

    @Test func theWatchShowingItsOwnWriteGrantsBeforeTheAnswerAndTheAnswerChangesNothing() throws {
        var machine = try Machine()
        let acquisition = try #require(Self.writes(machine.join()).first)
        let echo = machine.handle(.observed(.partition(0), revision: Revision(60), value: .record(try Self.ownRecord(acquisition.id.sequence))))
        #expect(echo == [.startOwning(partition: 0, fence: Fence(Revision(60)))])
        #expect(machine.handle(.completed(acquisition, .stored(Revision(60)))).isEmpty)
        #expect(machine.leases.fence(for: 0, now: machine.now) == Fence(Revision(60)))
    }

    @Test func aNewerRevisionOfAnOwnedLeaseBySomebodyElseStopsOwningAtOnce() throws {
        var machine = try Machine.owning(partitions: 1)
        #expect(machine.observe(.partition(0), try Self.record("a")) == [.stopOwning(partition: 0)])
        #expect(machine.leases.fence(for: 0, now: machine.now) == nil)
    }

    @Test func anOutOfDateReportChangesNothing() throws {
        var machine = try Machine.owning(partitions: 1)
        let fence = try #require(machine.leases.fence(for: 0, now: machine.now))
        #expect(machine.handle(.observed(.partition(0), revision: Revision(fence.revision.value - 1), value: try Self.record("a"))).isEmpty)
        #expect(machine.handle(.observed(.partition(0), revision: fence.revision, value: .deleted)).isEmpty)
        #expect(machine.leases.fence(for: 0, now: machine.now) == fence)
    }

    // MARK: Taking over

    @Test func somebodysLeaseIsTakenOverOnlyALeaseTTLAfterItsLatestRevisionWasLearned() throws {
        var machine = try Machine()
        _ = machine.handle(.observed(.partition(0), revision: Revision(3), value: try Self.record("gone")))
        #expect(Self.writes(machine.join()).isEmpty)
        #expect(machine.leases.nextTick == Machine.origin + .seconds(1), "heartbeat renewal first")
        _ = machine.tick(after: .seconds(2))
        // The holder renews: the TTL runs from now.
        _ = machine.handle(.observed(.partition(0), revision: Revision(4), value: try Self.record("gone", write: 2)))
        let renewed = machine.now
        machine.now = renewed + machine.settings.leaseTTL - .milliseconds(1)
        #expect(Self.writes(machine.handle(.tick)).filter { $0.key == .partition(0) }.isEmpty)
        machine.now = renewed + machine.settings.leaseTTL
        let takeover = Self.writes(machine.handle(.tick)).filter { $0.key == .partition(0) }
        #expect(takeover.map(\.change) == [.update(try Self.ownRecord(takeover.first?.id.sequence ?? 0), expected: Revision(4))])
    }

    /// The holder stops using its lease on its own TTL: a record naming a longer one than the
    /// observer's is waited for in full, and a shorter one no longer than it says.
    @Test(arguments: [Duration.seconds(10), .milliseconds(1_500)])
    func somebodysLeaseLastsTheTTLItsRecordNamesNotTheObserversOwn(_ named: Duration) throws {
        var machine = try Machine()
        #expect(machine.settings.leaseTTL == .seconds(3))
        _ = machine.handle(.observed(.partition(0), revision: Revision(3), value: try Self.record("gone", ttl: named)))
        #expect(Self.writes(machine.join()).isEmpty)
        let learned = machine.now
        var taken: Duration?
        while taken == nil && machine.now < learned + .seconds(12) {
            if Self.writes(machine.tick(after: .milliseconds(100))).contains(where: { $0.key == .partition(0) }) { taken = machine.now - learned }
        }
        #expect(taken == named)
    }

    @Test func anUnreadableValueIsSomebodysUntilItExpires() throws {
        var machine = try Machine()
        _ = machine.handle(.observed(.partition(0), revision: Revision(3), value: .unreadable))
        #expect(Self.writes(machine.join()).isEmpty)
        machine.now = Machine.origin + machine.settings.leaseTTL
        let takeover = try #require(Self.writes(machine.handle(.tick)).first { $0.key == .partition(0) })
        #expect(takeover.change == .update(try Self.ownRecord(takeover.id.sequence), expected: Revision(3)))
    }

    @Test func aRestartOwnsNothingItsEarlierRunHeldUntilItWinsItBack() throws {
        var machine = try Machine(incarnation: 8)
        let me = try Self.id("b")
        let earlierRun = PartitionLeases.ObservedValue.record(LeaseRecord(holder: me, incarnation: 7, write: BucketWrite.ID(sequence: 9), ttl: .seconds(3)))
        _ = machine.handle(.observed(.partition(0), revision: Revision(3), value: earlierRun))
        _ = machine.handle(.observed(.member(me), revision: Revision(4), value: earlierRun))
        let heartbeat = Self.writes(machine.handle(.caughtUp))
        #expect(heartbeat.map(\.change) == [.update(try Self.ownRecord(1, incarnation: 8), expected: Revision(4))])
        #expect(Self.writes(machine.storeAll(heartbeat.map(Action.write))).isEmpty)
        #expect(machine.leases.fence(for: 0, now: machine.now) == nil)
        machine.now = Machine.origin + machine.settings.leaseTTL
        let takeover = try #require(Self.writes(machine.handle(.tick)).first { $0.key == .partition(0) })
        #expect(takeover.change == .update(try Self.ownRecord(takeover.id.sequence, incarnation: 8), expected: Revision(3)))
        #expect(machine.leases.fence(for: 0, now: machine.now) == nil)
        #expect(machine.store(takeover) == [.startOwning(partition: 0, fence: Fence(Revision(102)))])
    }

    @Test func aLapsedLeaseOfThisRunIsWonBackWithoutWaiting() throws {
        var machine = try Machine.owning(partitions: 1)
        // Every write fails until the lease lapses.
        while machine.leases.fence(for: 0, now: machine.now) != nil, let due = machine.leases.nextTick {
            machine.now = due
            for write in Self.writes(machine.handle(.tick)) { _ = machine.handle(.completed(write, .failed)) }
        }
        #expect(machine.leases.ownedPartitions.isEmpty)
        // Nobody else wrote: the next try updates the revision it wrote itself, and wins.
        let reclaim = try #require(Self.writes(machine.tick(after: machine.settings.retryDelay)).first { $0.key == .partition(0) })
        #expect(reclaim.change == .update(try Self.ownRecord(reclaim.id.sequence), expected: Revision(102)))
        #expect(machine.store(reclaim) == [.startOwning(partition: 0, fence: Fence(Revision(103)))])
    }

    // MARK: Balance

    @Test func aSecondMemberMakesItReleaseDownToItsShareStoppingBeforeEachDelete() throws {
        var machine = try Machine.owning(partitions: 4)
        let revisions = Dictionary(uniqueKeysWithValues: (0..<4).compactMap { partition in
            machine.leases.fence(for: partition, now: machine.now).map { (partition, $0.revision) }
        })
        let actions = machine.observe(.member(try Self.id("c")), try Self.record("c"))
        #expect(actions.count == 4)
        for pair in stride(from: 0, to: actions.count, by: 2) {
            guard case .stopOwning(let partition) = actions[pair], case .write(let delete) = actions[pair + 1] else {
                Issue.record("not a stop followed by its delete: \(actions)")
                continue
            }
            #expect(delete.key == .partition(partition))
            #expect(delete.change == .delete(expected: try #require(revisions[partition])))
        }
        #expect(machine.leases.ownedPartitions.count == 2)
    }

    @Test func aJoinerTakesOnlyFreeOrDeadPartitions() throws {
        var machine = try Machine(partitions: 2)
        _ = machine.observe(.member(try Self.id("a")), try Self.record("a"))
        _ = machine.observe(.partition(0), try Self.record("a", write: 2))
        _ = machine.observe(.partition(1), try Self.record("a", write: 3))
        #expect(Self.writes(machine.join()).isEmpty, "took a live member's partition")
        let delete = machine.observe(.partition(1), .deleted)
        #expect(Self.writes(delete).map(\.key) == [.partition(1)])
        #expect(Self.writes(delete).map(\.change) == [.create(try Self.ownRecord(2))])
    }

    @Test func theFirstLiveMemberByNameDeletesExpiredHeartbeats() throws {
        var first = try Machine("a")
        var second = try Machine("b")
        for index in 0..<2 {
            var machine = index == 0 ? first : second
            _ = machine.handle(.observed(.member(try Self.id("z")), revision: Revision(5), value: try Self.record("z")))
            _ = machine.handle(.observed(.member(try Self.id("a")), revision: Revision(6), value: try Self.record("a")))
            if index == 0 { first = machine } else { second = machine }
        }
        _ = first.join()
        _ = second.join()
        let at = Machine.origin + first.settings.memberTTL
        first.now = at
        second.now = at
        let dead = LeaseKey.member(try Self.id("z"))
        #expect(Self.writes(first.handle(.tick)).contains { $0.key == dead && $0.change == .delete(expected: Revision(5)) })
        // "b" still sees "a" alive (learned at the same time, and "a" renews): not its job.
        _ = second.handle(.observed(.member(try Self.id("a")), revision: Revision(7), value: try Self.record("a", write: 2)))
        #expect(!Self.writes(second.handle(.tick)).contains { $0.key == dead })
    }

    // MARK: Shutdown

    @Test func aShutdownStopsAtOnceThenDeletesTheHeartbeatAndEveryLease() throws {
        var machine = try Machine.owning(partitions: 2)
        let actions = machine.handle(.shutdown)
        #expect(Array(actions.prefix(2)) == [.stopOwning(partition: 0), .stopOwning(partition: 1)])
        let deletes = Self.writes(actions)
        #expect(deletes.map(\.key) == [.member(try Self.id("b")), .partition(0), .partition(1)])
        #expect(deletes.allSatisfy { if case .delete = $0.change { true } else { false } })
        #expect(machine.leases.fence(for: 0, now: machine.now) == nil && machine.leases.phase == .leaving)
        #expect(deletes.dropLast().flatMap { machine.store($0) }.isEmpty)
        #expect(machine.store(try #require(deletes.last)) == [.shutdownComplete])
        #expect(machine.leases.phase == .left && machine.leases.nextTick == nil)
        #expect(machine.tick(after: .seconds(1)).isEmpty && machine.handle(.caughtUp).isEmpty)
    }

    @Test func aShutdownWhoseDeletesKeepFailingGivesUpAfterALeaseTTL() throws {
        var machine = try Machine.owning(partitions: 1)
        let start = machine.now
        var actions = machine.handle(.shutdown)
        while !actions.contains(.shutdownComplete), let due = machine.leases.nextTick {
            for write in Self.writes(actions) { _ = machine.handle(.completed(write, .failed)) }
            machine.now = max(machine.now, due)
            actions = machine.handle(.tick)
        }
        #expect(actions.contains(.shutdownComplete))
        #expect(machine.now == start + machine.settings.leaseTTL)
    }

    @Test func aShutdownBeforeJoiningCompletesAtOnce() throws {
        var machine = try Machine()
        #expect(machine.handle(.shutdown) == [.shutdownComplete])
    }
}
