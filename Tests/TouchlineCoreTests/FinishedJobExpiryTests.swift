import Testing
import TouchlineCore

/// When finished jobs leave a cluster's job bucket, in virtual time: removed a retention after
/// they finished, by the sweeper only, once each; purged a sweep after every gateway saw the
/// removal; a gateway that is not the sweeper forgets what it saw.
@Suite struct FinishedJobExpiryTests {
    static let start = UnixTime(seconds: 1_000)

    @Test func aFinishedJobIsRemovedOnceAfterItsRetentionThenPurgedASweepLater() {
        var expiry = FinishedJobExpiry(retention: .seconds(3_600))
        #expect(expiry.sweepInterval == .seconds(60))
        expiry.finished("a", at: Self.start)
        expiry.finished("b", at: Self.start + .seconds(600))

        #expect(expiry.sweep(at: Self.start + .seconds(3_599), isSweeper: true) == [])
        #expect(expiry.sweep(at: Self.start + .seconds(3_600), isSweeper: true) == [.remove(jobID: "a")])
        #expect(expiry.sweep(at: Self.start + .seconds(3_660), isSweeper: true) == [], "its marker is written and not yet seen: not again")
        expiry.removed("a", seenAt: Self.start + .seconds(3_661))
        #expect(expiry.sweep(at: Self.start + .seconds(3_720), isSweeper: true) == [], "seen less than a sweep ago")
        #expect(expiry.sweep(at: Self.start + .seconds(3_721), isSweeper: true) == [.purge(jobID: "a")])
        #expect(expiry.sweep(at: Self.start + .seconds(4_200), isSweeper: true) == [.remove(jobID: "b")])
        #expect(expiry.finishedCount == 1 && expiry.removedCount == 0)
    }

    @Test func aFailedRemovalIsWrittenAgainAtTheNextSweep() {
        var expiry = FinishedJobExpiry(retention: .seconds(8))
        #expect(expiry.sweepInterval == .seconds(2))
        expiry.finished("a", at: Self.start)
        #expect(expiry.sweep(at: Self.start + .seconds(8), isSweeper: true) == [.remove(jobID: "a")])
        expiry.removeFailed("a")
        #expect(expiry.sweep(at: Self.start + .seconds(10), isSweeper: true) == [.remove(jobID: "a")])
    }

    @Test func onlyTheSweeperWritesAndTheOthersForgetWhatTheySaw() {
        var other = FinishedJobExpiry(retention: .seconds(60))
        other.finished("a", at: Self.start)
        #expect(other.sweep(at: Self.start + .seconds(120), isSweeper: false) == [])
        other.removed("a", seenAt: Self.start + .seconds(121))
        #expect(other.removedCount == 1 && other.finishedCount == 0)
        #expect(other.sweep(at: Self.start + .seconds(121) + other.sweepInterval * 2, isSweeper: false) == [])
        #expect(other.removedCount == 0, "two sweeps later the sweeper has purged it")
        // A gateway that becomes the sweeper purges the markers it saw, whoever wrote them.
        other.removed("b", seenAt: Self.start + .seconds(200))
        #expect(other.sweep(at: Self.start + .seconds(200) + other.sweepInterval, isSweeper: true) == [.purge(jobID: "b")])
        // A job removed before its final entry was seen (a watch reading an old entry late) is not removed again.
        other.removed("c", seenAt: Self.start + .seconds(300))
        other.finished("c", at: Self.start)
        #expect(other.sweep(at: Self.start + .seconds(300) + other.sweepInterval, isSweeper: true) == [.purge(jobID: "c")])
    }

    @Test func theSweepIntervalIsAQuarterOfTheRetentionBetweenOneSecondAndAMinute() {
        #expect(FinishedJobExpiry(retention: .seconds(2)).sweepInterval == .seconds(1))
        #expect(FinishedJobExpiry(retention: .seconds(40)).sweepInterval == .seconds(10))
        #expect(FinishedJobExpiry(retention: .seconds(7 * 86_400)).sweepInterval == .seconds(60))
    }
}
