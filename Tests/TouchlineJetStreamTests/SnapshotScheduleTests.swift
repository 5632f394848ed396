import Testing
import TouchlineJetStream

struct SnapshotScheduleTests {
    static let settings = SnapshotSchedule.Settings(minimumLogBytes: 1_000, maximumPartBytes: 10_000)

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
        schedule.snapshotted(4_000, partition: 0)
        #expect(!schedule.isDue(0))
        schedule.logged(3_999, to: 0)
        #expect(!schedule.isDue(0))
        schedule.logged(1, to: 0)
        #expect(schedule.isDue(0))
    }

    /// Where the log costs more to apply than the snapshot to restore (a registry partition's
    /// file image), the next snapshot waits for a log of that share of the last one only.
    @Test func aShareOfTheSnapshotMakesTheNextOneDueSooner() {
        var settings = Self.settings
        settings.logShareOfSnapshot = 1.0 / 8
        var schedule = SnapshotSchedule(settings: settings)
        schedule.snapshotted(80_000, partition: 1)
        schedule.logged(9_999, to: 1)
        #expect(!schedule.isDue(1))
        schedule.logged(1, to: 1)
        #expect(schedule.isDue(1))
        schedule.snapshotted(4_000, partition: 1)
        schedule.logged(999, to: 1)
        #expect(!schedule.isDue(1), "still at least the minimum")
        schedule.logged(1, to: 1)
        #expect(schedule.isDue(1))
        #expect(RegistryPartition.snapshotSchedule.logShareOfSnapshot < 1, "a registry partition's schedule")
    }

    /// Where the tail's bytes cost more the larger the partition, the log since the last
    /// snapshot is also capped in bytes: a large partition's next snapshot comes after at most
    /// that much, a small one's still after its share (and the minimum).
    @Test func aCapOnTheLogMakesALargePartitionsNextSnapshotDueSooner() {
        var settings = Self.settings
        settings.logShareOfSnapshot = 1.0 / 8
        settings.maximumLogBytes = 5_000
        var schedule = SnapshotSchedule(settings: settings)
        schedule.snapshotted(80_000, partition: 1)
        schedule.logged(4_999, to: 1)
        #expect(!schedule.isDue(1))
        schedule.logged(1, to: 1)
        #expect(schedule.isDue(1), "the cap, not the share's 10,000")
        schedule.snapshotted(16_000, partition: 1)
        schedule.logged(1_999, to: 1)
        #expect(!schedule.isDue(1), "below the cap the share decides")
        schedule.logged(1, to: 1)
        #expect(schedule.isDue(1))
        settings.maximumLogBytes = 500
        schedule = SnapshotSchedule(settings: settings)
        schedule.snapshotted(80_000, partition: 1)
        schedule.logged(999, to: 1)
        #expect(!schedule.isDue(1), "the minimum still first")
        schedule.logged(1, to: 1)
        #expect(schedule.isDue(1))
        #expect(RegistryPartition.snapshotSchedule.maximumLogBytes < .max, "a registry partition's schedule")
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

/// Snapshots as messages: cut into parts no larger than a message may be, read back from
/// consecutive sequences only.
struct SnapshotPartsTests {
    @Test func aSnapshotIsCutIntoPartsAndReadBackWhole() {
        let bytes = (0..<1_000).map { UInt8($0 % 251) }
        #expect(SnapshotParts.cut(bytes, partBytes: 1_000) == [bytes])
        let parts = SnapshotParts.cut(bytes, partBytes: 300)
        #expect(parts.map(\.count) == [300, 300, 300, 100])
        // Each part where a lazy writer reads it (a registry image from its file).
        #expect((0..<SnapshotParts.count(of: bytes.count, partBytes: 300)).map { SnapshotParts.range(of: $0, in: bytes.count, partBytes: 300) }
                == [0..<300, 300..<600, 600..<900, 900..<1_000])
        #expect(SnapshotParts.count(of: 0, partBytes: 300) == 1)
        var reading = SnapshotParts.Reading(count: parts.count, firstPart: parts[0], at: 41)
        for (offset, part) in parts.enumerated().dropFirst() {
            #expect(!reading.isComplete)
            let added = reading.add(part, index: offset + 1, at: 41 + UInt64(offset))
            #expect(added)
        }
        #expect(reading.isComplete && reading.bytes == bytes)
    }

    @Test func aPartOutOfPlaceIsNotTaken() {
        var reading = SnapshotParts.Reading(count: 3, firstPart: [1], at: 10)
        let outcomes = [reading.add([2], index: 2, at: 12), reading.add([3], index: 3, at: 11), reading.add([2], index: 2, at: 11),
                        reading.add([2], index: 2, at: 12)]
        #expect(outcomes == [false, false, true, false], "a sequence skipped, a part skipped, the next part, the same part again")
        #expect(reading.bytes == [1, 2] && !reading.isComplete)
    }

    @Test func headersNameThePartAndTheCount() {
        #expect(SnapshotParts.header(index: 2, count: 5) == "2/5")
        #expect(SnapshotParts.parse("2/5")! == (2, 5))
        #expect(SnapshotParts.parse("1")! == (1, 1), "a whole snapshot, as written before parts")
        for bad in ["0/3", "4/3", "2/0", "x/3", "2/", "1/2/3", ""] { #expect(SnapshotParts.parse(bad) == nil, "\(bad)") }
    }
}
