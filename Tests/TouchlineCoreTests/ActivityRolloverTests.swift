import Foundation
import Testing
import TouchlineCore

/// The rollover past the 8-hour limit, in virtual time: when it starts, the order of its steps
/// (each saved before the next), retries with back-off, what a restart re-does, and a match that
/// ends in the middle of it.
@Suite struct ActivityRolloverTests {
    let start = UnixTime(seconds: 1_767_290_400)
    let age = Duration.seconds(7 * 3600)

    let interval = Duration.seconds(600)

    @Test func anOperatorMayStartOneRolloverAtATime() {
        var rollover = ActivityRollover(generationStartedAt: start)
        #expect(rollover.start(now: start, minimumInterval: interval) == .success([.persist, .createSuccessor]))
        #expect(rollover.start(now: start, minimumInterval: interval) == .failure(.underWay))
        rollover.startNotSaved(previous: nil)
        #expect(rollover.stage == .live && rollover.lastStartedAt == nil, "a start that was not saved did not begin")
        #expect(rollover.start(now: start, minimumInterval: interval) == .success([.persist, .createSuccessor]))
    }

    /// Rollovers of a channel are at least the minimum interval apart, whoever asks: an operator
    /// is told when the next may begin, and one due by age waits until then.
    @Test func rolloversAreAtLeastTheMinimumIntervalApart() throws {
        var rollover = ActivityRollover(generationStartedAt: start)
        #expect(rollover.start(now: start + .seconds(5), minimumInterval: interval) == .success([.persist, .createSuccessor]))
        Self.complete(&rollover, at: start + .seconds(6))
        let earliest = start + .seconds(5) + interval
        #expect(rollover.start(now: start + .seconds(10), minimumInterval: interval) == .failure(.tooSoon(until: earliest)))
        #expect(rollover.start(now: earliest - .nanoseconds(1), minimumInterval: interval) == .failure(.tooSoon(until: earliest)))
        #expect(rollover.stage == .live, "a refused start changes nothing")

        // Due by age sooner than the interval allows: armed for the interval's end, not started before.
        let shortAge = Duration.seconds(60)
        #expect(rollover.check(now: start + .seconds(100), maximumAge: shortAge, minimumInterval: interval, canRoll: true) == [.armTimer(at: earliest)])
        #expect(rollover.check(now: earliest, maximumAge: shortAge, minimumInterval: interval, canRoll: true) == [.persist, .createSuccessor])
        #expect(rollover.lastStartedAt == earliest)

        // The last start is saved: a restart grants no early rollover.
        var saved = try Self.roundTrip(rollover)
        Self.complete(&saved, at: earliest + .seconds(1))
        #expect(saved.start(now: earliest + .seconds(2), minimumInterval: interval) == .failure(.tooSoon(until: earliest + interval)))
    }

    /// A rollover saved before the last start was kept counts its generation's start as the last.
    @Test func aRolloverSavedWithoutItsLastStartCountsItsGeneration() throws {
        let old = #"{"stage": {"live": {}}, "generationStartedAt": \#(start.nanoseconds), "generation": 2, "attempts": 0}"#
        var rollover = try JSONDecoder().decode(ActivityRollover.self, from: Data(old.utf8))
        #expect(rollover.lastStartedAt == start)
        #expect(rollover.start(now: start + .seconds(1), minimumInterval: interval) == .failure(.tooSoon(until: start + interval)))
        let first = try JSONDecoder().decode(ActivityRollover.self, from: Data(old.replacingOccurrences(of: #""generation": 2"#, with: #""generation": 1"#).utf8))
        #expect(first.lastStartedAt == nil, "a first generation has had no rollover")
    }

    /// Runs a started rollover through its steps to the end.
    static func complete(_ rollover: inout ActivityRollover, at now: UnixTime) {
        _ = rollover.successorCreated("next-\(rollover.generation)", replacing: "current", isLive: true, now: now)
        _ = rollover.switched(isLive: true)
        _ = rollover.audienceStarted()
        _ = rollover.previousEnded()
        _ = rollover.previousDeleted(maximumAge: .zero, minimumInterval: .zero)
    }

    @Test func nothingHappensBeforeTheAgeAndNothingWithoutOne() {
        var rollover = ActivityRollover(generationStartedAt: start)
        #expect(rollover.check(now: start + .seconds(60), maximumAge: .zero, minimumInterval: .zero, canRoll: true).isEmpty)
        #expect(rollover.check(now: start + .seconds(60), maximumAge: age, minimumInterval: .zero, canRoll: true) == [.armTimer(at: start + age)])
        // Due, but the audience is not known (no kickoff yet) or the match is not live: it waits.
        #expect(rollover.check(now: start + age, maximumAge: age, minimumInterval: .zero, canRoll: false).isEmpty)
        #expect(rollover.stage == .live)
    }

    /// The whole rollover: the successor created and made the channel's APNs channel in one
    /// commit, the audience started on it, then the previous channel's activities ended and the
    /// channel deleted; the next one is due an age after the successor's creation.
    @Test func aRolloverRunsItsStepsInOrderAndArmsTheNext() {
        var rollover = ActivityRollover(generationStartedAt: start)
        let due = start + age
        #expect(rollover.check(now: due, maximumAge: age, minimumInterval: .zero, canRoll: true) == [.persist, .createSuccessor])
        #expect(rollover.stage == .creatingSuccessor)
        let created = due + .seconds(1)
        #expect(rollover.successorCreated("new", replacing: "old", isLive: true, now: created) == [.switchTo(successor: "new")])
        #expect(rollover.generation == 2 && rollover.generationStartedAt == created && rollover.otherChannel == "new")
        #expect(rollover.switched(isLive: true) == [.persist, .startAudience(generation: 2)])
        #expect(rollover.otherChannel == "old", "once the successor is the channel's, the previous one is the other")
        #expect(rollover.audienceStarted() == [.persist, .endPrevious("old")])
        #expect(rollover.previousEnded() == [.persist, .deletePrevious("old")])
        #expect(rollover.previousDeleted(maximumAge: age, minimumInterval: .zero) == [.persist, .armTimer(at: created + age)])
        #expect(rollover.stage == .live && rollover.previousChannel == nil)
        // Answers that come late change nothing.
        #expect(rollover.previousEnded().isEmpty && rollover.audienceStarted().isEmpty && rollover.switched(isLive: true).isEmpty)
    }

    @Test func aFailedStepIsRetriedWithBackOffUntilItSucceeds() {
        var rollover = ActivityRollover(generationStartedAt: start)
        _ = rollover.check(now: start + age, maximumAge: age, minimumInterval: .zero, canRoll: true)
        var now = start + age
        var delays: [Duration] = []
        for _ in 0..<4 {
            guard case .armRetry(let at)? = rollover.stepFailed(now: now).first else {
                Issue.record("no retry armed")
                return
            }
            delays.append(at - now)
            now = at
            #expect(rollover.retryDue(isLive: true) == [.persist, .createSuccessor], "the intent is saved before APNs is asked")
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8)])
        _ = rollover.successorCreated("new", replacing: "old", isLive: true, now: now)
        guard case .armRetry(let at)? = rollover.stepFailed(now: now).first else {
            Issue.record("no retry armed")
            return
        }
        #expect(at - now == .seconds(1), "a new step starts its back-off afresh")
        // A failed step is tried again as it was: the successor is not created twice.
        #expect(rollover.retryDue(isLive: true) == [.persist, .switchTo(successor: "new")])
    }

    /// After a restart, each saved stage does its step again: the create (its intent was saved),
    /// the start job (found stored by its generation's id if it was), the end, the deletion.
    @Test func aRestartResumesTheSavedStep() throws {
        var rollover = ActivityRollover(generationStartedAt: start)
        _ = rollover.check(now: start + age, maximumAge: age, minimumInterval: .zero, canRoll: true)
        var saved = try Self.roundTrip(rollover)
        #expect(saved.resumed(isLive: true) == [.createSuccessor])

        _ = rollover.successorCreated("new", replacing: "old", isLive: true, now: start + age)
        saved = try Self.roundTrip(rollover)
        #expect(saved.resumed(isLive: true) == [.switchTo(successor: "new")], "saving the switch again is harmless")
        _ = rollover.switched(isLive: true)
        saved = try Self.roundTrip(rollover)
        #expect(saved.resumed(isLive: true) == [.startAudience(generation: 2)])
        _ = rollover.audienceStarted()
        saved = try Self.roundTrip(rollover)
        #expect(saved.resumed(isLive: true) == [.endPrevious("old")])
        _ = rollover.previousEnded()
        saved = try Self.roundTrip(rollover)
        #expect(saved.resumed(isLive: false) == [.deletePrevious("old")], "the old channel is cleaned up whatever the match does")
        _ = rollover.previousDeleted(maximumAge: age, minimumInterval: .zero)
        saved = try Self.roundTrip(rollover)
        #expect(saved.resumed(isLive: true).isEmpty && saved == rollover)
    }

    /// A match that ends during a rollover: a successor created after the end is deleted again;
    /// one made current before the end starts no audience, and the previous activities are
    /// ended at once (with the final state).
    @Test func aMatchEndingDuringTheRolloverStartsNoAudience() {
        var rollover = ActivityRollover(generationStartedAt: start)
        _ = rollover.check(now: start + age, maximumAge: age, minimumInterval: .zero, canRoll: true)
        #expect(rollover.successorCreated("new", replacing: "old", isLive: false, now: start + age) == [.persist, .deleteUnneeded("new")])
        #expect(rollover.stage == .live && rollover.generation == 1)

        var switching = ActivityRollover(generationStartedAt: start)
        _ = switching.check(now: start + age, maximumAge: age, minimumInterval: .zero, canRoll: true)
        _ = switching.successorCreated("new", replacing: "old", isLive: true, now: start + age)
        #expect(switching.switched(isLive: false) == [.persist, .endPrevious("old")])

        var starting = ActivityRollover(generationStartedAt: start)
        _ = starting.check(now: start + age, maximumAge: age, minimumInterval: .zero, canRoll: true)
        _ = starting.successorCreated("new", replacing: "old", isLive: true, now: start + age)
        _ = starting.switched(isLive: true)
        #expect(starting.resumed(isLive: false) == [.persist, .endPrevious("old")], "ended before the audience was started")

        var restarted = ActivityRollover(generationStartedAt: start)
        _ = restarted.check(now: start + age, maximumAge: age, minimumInterval: .zero, canRoll: true)
        #expect(restarted.resumed(isLive: false) == [.persist], "no successor for an ended match")
        #expect(restarted.stage == .live)
    }

    static func roundTrip(_ rollover: ActivityRollover) throws -> ActivityRollover {
        try JSONDecoder().decode(ActivityRollover.self, from: JSONEncoder().encode(rollover))
    }
}
