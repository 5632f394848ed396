import LoadKit
import Testing

@Suite struct SoakScheduleTests {
    @Test func theSameSeedGivesTheSameFaultsAndAnotherSeedOthers() throws {
        let first = try SoakSchedule(seconds: 180, kills: 3, diskEpisodes: 1, diskSeconds: 6, seed: 11)
        let again = try SoakSchedule(seconds: 180, kills: 3, diskEpisodes: 1, diskSeconds: 6, seed: 11)
        let other = try SoakSchedule(seconds: 180, kills: 3, diskEpisodes: 1, diskSeconds: 6, seed: 12)
        #expect(first == again)
        #expect(first.moments.map(\.at) != other.moments.map(\.at))
    }

    /// Over many seeds: the faults are in order, inside the run after its lead and before its
    /// tail, never overlapping (a disk episode ends before the next fault), and the disk episode
    /// does not always take the same slot.
    @Test func faultsAreOrderedSpacedAndLeaveLoadBeforeAndAfter() throws {
        var diskSlots: Set<Int> = []
        for seed in UInt64(1)...200 {
            let schedule = try SoakSchedule(seconds: 150, kills: 3, diskEpisodes: 1, diskSeconds: 5, seed: seed)
            #expect(schedule.moments.count == 4)
            #expect(schedule.kills == 3)
            #expect(schedule.moments.first!.at >= 15)
            var previousEnd = 0.0
            for (index, moment) in schedule.moments.enumerated() {
                let length: Double
                switch moment.fault {
                case .kill: length = 0
                case .diskFull(let seconds):
                    length = seconds
                    diskSlots.insert(index)
                }
                #expect(moment.at > previousEnd + 1, "seed \(seed): fault \(index) starts before the previous one ended")
                previousEnd = moment.at + length
            }
            #expect(previousEnd <= 150 - 22.5, "seed \(seed): no load after the last fault")
        }
        #expect(diskSlots.count == 4)
    }

    @Test func noFaultsIsAnEmptySchedule() throws {
        #expect(try SoakSchedule(seconds: 30, kills: 0, diskEpisodes: 0, diskSeconds: 5, seed: 1).moments.isEmpty)
    }

    @Test func tooManyFaultsForTheRunAreRefusedWithAReason() {
        #expect(throws: SoakScheduleError.self) { try SoakSchedule(seconds: 20, kills: 10, diskEpisodes: 0, diskSeconds: 5, seed: 1) }
        do {
            _ = try SoakSchedule(seconds: 40, kills: 2, diskEpisodes: 1, diskSeconds: 20, seed: 1)
            Issue.record("a 20 s episode in a 40 s run was accepted")
        } catch {
            #expect(error.description.contains("does not fit"), "\(error)")
        }
    }
}
