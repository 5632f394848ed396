import Testing
import TouchlineJetStream

struct SnapshotScheduleTests {
    static let settings = SnapshotSchedule.Settings(minimumLogBytes: 1_000, maximumSnapshotBytes: 10_000)

    @Test func aPartitionIsDueOnceItsLogOutweighsTheMinimum() {
        var schedule = SnapshotSchedule(settings: Self.settings)
        #expect(!schedule.isDue(3), "nothing logged")
        schedule.logged(999, to: 3)
        #expect(!schedule.isDue(3))
        schedule.logged(1, to: 3)
        #expect(schedule.isDue(3))
        #expect(!schedule.isDue(4), "partitions are counted apart")
    }

    /// Replay reads at most about twice the state: the next snapshot waits for a log as heavy
    /// as the last snapshot.
    @Test func afterASnapshotTheNextWaitsForALogAsHeavyAsIt() {
        var schedule = SnapshotSchedule(settings: Self.settings)
        schedule.logged(5_000, to: 0)
        #expect(schedule.decide(snapshotOf: 4_000, partition: 0) == .write)
        schedule.snapshotted(4_000, partition: 0)
        #expect(!schedule.isDue(0))
        schedule.logged(3_999, to: 0)
        #expect(!schedule.isDue(0))
        schedule.logged(1, to: 0)
        #expect(schedule.isDue(0))
    }

    @Test func aSnapshotTooLargeForOneMessageIsSkippedUntilAsMuchIsLoggedAgain() {
        var schedule = SnapshotSchedule(settings: Self.settings)
        schedule.logged(20_000, to: 1)
        #expect(schedule.decide(snapshotOf: 10_001, partition: 1) == .skip)
        #expect(!schedule.isDue(1))
        schedule.logged(10_000, to: 1)
        #expect(!schedule.isDue(1))
        schedule.logged(1, to: 1)
        #expect(schedule.isDue(1))
        #expect(schedule.decide(snapshotOf: 10_000, partition: 1) == .write)
    }

    /// A snapshot read while replaying counts like one written: a new owner does not snapshot
    /// again at once.
    @Test func aSnapshotReadOnReplayResetsTheCount() {
        var schedule = SnapshotSchedule(settings: Self.settings)
        schedule.logged(50_000, to: 2)
        schedule.snapshotted(2_000, partition: 2)
        schedule.logged(1_500, to: 2)
        #expect(!schedule.isDue(2))
    }
}
