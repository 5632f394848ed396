import Testing
import TouchlineCore

@Suite struct PriorityBudgetTests {
    let t0 = UnixTime(seconds: 1_767_290_400)

    @Test func spendsUpToTheLimitThenRefuses() {
        var budget = PriorityBudget(limit: 3)
        for i in 0..<3 { do { let allowed = budget.spend(now: t0 + .seconds(i)); #expect(allowed) } }
        #expect(!budget.canSpend(now: t0 + .seconds(10)))
        do { let allowed = budget.spend(now: t0 + .seconds(10)); #expect(!allowed) }
        #expect(budget.remaining(now: t0 + .seconds(10)) == 0)
        #expect(budget.spends.count == 3)
    }

    @Test func theWindowRollsExactlyOneHourAfterEachSpend() {
        var budget = PriorityBudget(limit: 2)
        budget.spend(now: t0)
        budget.spend(now: t0 + .seconds(600))
        let hourLater = t0 + .seconds(3600)
        #expect(budget.remaining(now: UnixTime(nanoseconds: hourLater.nanoseconds - 1)) == 0)
        #expect(budget.remaining(now: hourLater) == 1)
        do { let allowed = budget.spend(now: hourLater); #expect(allowed) }
        #expect(!budget.canSpend(now: hourLater + .seconds(599)))
        #expect(budget.canSpend(now: hourLater + .seconds(600)))
        // Spends that left the window are pruned on the next spend.
        #expect(budget.spends == [t0 + .seconds(600), hourLater])
    }

    @Test func aRefundGivesTheSpendBack() {
        var budget = PriorityBudget(limit: 1)
        budget.spend(now: t0)
        budget.refund(spentAt: t0)
        #expect(budget.remaining(now: t0) == 1)
        budget.refund(spentAt: t0)
        #expect(budget.spends.isEmpty)
    }

    @Test func spendsAfterNowStillCountWhenTheClockStepsBack() {
        var budget = PriorityBudget(limit: 1)
        budget.spend(now: t0)
        #expect(!budget.canSpend(now: t0 - .seconds(7200)))
    }

    @Test func restoresFromItsSpendTimes() {
        var budget = PriorityBudget(limit: 10)
        for i in 0..<4 { budget.spend(now: t0 + .seconds(i * 60)) }
        let restored = PriorityBudget(limit: 10, spends: budget.spends)
        #expect(restored == budget)
        #expect(restored.remaining(now: t0 + .seconds(300)) == 6)
    }
}

@Suite struct TimestampClockTests {
    let t0 = UnixTime(seconds: 1_767_290_400)

    @Test func followsTheWallClockWhenItMovesOn() {
        var clock = TimestampClock()
        do { let stamp = clock.next(now: t0 + .milliseconds(900)); #expect(stamp.seconds == t0.seconds) }
        do { let stamp = clock.next(now: t0 + .seconds(5)); #expect(stamp.seconds == t0.seconds + 5) }
    }

    @Test func pushesInTheSameSecondGetOneSecondEach() {
        var clock = TimestampClock()
        let stamps = (0..<4).map { clock.next(now: t0 + .milliseconds($0 * 100)).seconds }
        #expect(stamps == [0, 1, 2, 3].map { t0.seconds + $0 })
        // Once the wall clock passes the stamps again, it is followed.
        do { let stamp = clock.next(now: t0 + .seconds(10)); #expect(stamp.seconds == t0.seconds + 10) }
    }

    @Test func neverGoesBackWhenTheWallClockDoes() {
        var clock = TimestampClock(last: t0.seconds)
        #expect(clock.peek(now: t0 - .seconds(3600)).seconds == t0.seconds + 1)
        do { let stamp = clock.next(now: t0 - .seconds(3600)); #expect(stamp.seconds == t0.seconds + 1) }
        do { let stamp = clock.next(now: t0 - .seconds(3599)); #expect(stamp.seconds == t0.seconds + 2) }
    }
}
