import Foundation
import Testing
import TouchlineCore

/// Importance-aware pacing in virtual time: critical changes draw on a reserve of their own and
/// wait at most for the push in flight; low changes wait for their slower cadence unless a more
/// important push carries them; the uniform policy keeps the pacing that came before.
@Suite struct ChannelEnginePacingTests {
    let t0 = UnixTime(seconds: 1_767_290_400)
    /// Default pacing, deterministic back-off (no jitter).
    let policy = ChannelPolicy(throttleBackoff: Backoff(initial: .seconds(4), maximum: .seconds(120), multiplier: 2, jitter: 0))

    func seconds(_ shell: VirtualShell) -> [Double] { shell.sendTimes.map { ($0 - t0).inSeconds } }

    /// Three normal changes at t0 empty the shared bucket (burst 3).
    func spendTheSharedBucket(_ shell: inout VirtualShell) throws {
        for minute in 1...3 { try shell.apply(match(minute: Int64(minute)), .normal, at: t0) }
        #expect(shell.sent.count == 3)
    }

    @Test func aCriticalChangeGoesAtOnceWhenRoutineUpdatesEmptiedTheBucket() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try spendTheSharedBucket(&shell)
        try shell.apply(match(home: 1, minute: 4), .critical, alert: goalAlert, at: t0 + .milliseconds(500))
        #expect(seconds(shell) == [0, 0, 0, 0.5])
        #expect(shell.sent.last?.priority == .immediate && shell.sent.last?.hasAlert == true)
        #expect(shell.engine.counters.reservedPushes == 1 && shell.engine.counters.rateLimitDeferrals == 0)

        // Before: the goal waited for the shared bucket's next token, 1.5 s later.
        var uniform = VirtualShell(policy: Self.uniform(policy), start: t0)
        try spendTheSharedBucket(&uniform)
        try uniform.apply(match(home: 1, minute: 4), .critical, alert: goalAlert, at: t0 + .milliseconds(500))
        uniform.advance(to: t0 + .seconds(10))
        #expect(seconds(uniform) == [0, 0, 0, 2])
    }

    @Test func aCriticalChangeWaitsOnlyForThePushInFlight() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.answersAtOnce = false
        try shell.apply(match(minute: 1), .normal, at: t0)
        try shell.apply(match(home: 1, minute: 1), .critical, alert: goalAlert, at: t0 + .milliseconds(100))
        #expect(shell.sent.count == 1)
        shell.advance(to: t0 + .milliseconds(130))
        shell.answer()
        #expect(seconds(shell) == [0, 0.13])
        #expect(shell.sent.last?.priority == .immediate)
    }

    /// The reserve holds two tokens and earns one back every 10 s; beyond it, a critical change
    /// takes the earlier of the two buckets' next tokens.
    @Test func theReserveHoldsTwoThenTheEarlierBucketServes() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try spendTheSharedBucket(&shell)
        for (index, offset) in [100, 200, 300].enumerated() {
            try shell.apply(match(home: Int64(index + 1), minute: 5), .critical, alert: goalAlert, at: t0 + .milliseconds(offset))
        }
        shell.advance(to: t0 + .seconds(30))
        #expect(seconds(shell) == [0, 0, 0, 0.1, 0.2, 2])
        #expect(shell.sent.dropFirst(3).allSatisfy { $0.priority == .immediate })
        #expect(shell.engine.counters.reservedPushes == 2 && shell.engine.counters.rateLimitDeferrals == 1)

        // Ten seconds after the first reserved token went, one is back: this goal goes at once
        // although the shared bucket is empty again.
        try spendShared(&shell, at: t0 + .seconds(9))
        try shell.apply(match(home: 9, minute: 9), .critical, alert: goalAlert, at: t0 + .milliseconds(10_100))
        #expect(shell.sendTimes.last == t0 + .milliseconds(10_100) && shell.engine.counters.reservedPushes == 3)
    }

    /// Empties the shared bucket with normal changes at `time` (the bucket holds at most 3).
    private func spendShared(_ shell: inout VirtualShell, at time: UnixTime) throws {
        for tick in 1...3 { try shell.apply(match(minute: 8, tick: Int64(tick)), .normal, at: time) }
        #expect(shell.engine.snapshot.limiter.tokens == 0)
    }

    @Test func lowChangesWaitForTheirCadenceUnlessAMoreImportantPushCarriesThem() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try shell.apply(match(minute: 0), .normal, at: t0)
        for second in 1...99 {
            if second == 70 {
                try shell.apply(match(home: 0, minute: 1, tick: Int64(second)), .normal, at: t0 + .seconds(second))
            } else {
                try shell.apply(match(minute: second < 70 ? 0 : 1, tick: Int64(second)), .low, at: t0 + .seconds(second))
            }
        }
        shell.advance(to: t0 + .seconds(200))
        // Every 30 s after the last accepted push; the normal change at 70 s carries tick 70 at
        // once and restarts the cadence.
        #expect(seconds(shell) == [0, 30, 60, 70, 100])
        #expect(shell.sent.map { $0.contentState["tick"] as? Int } == [0, 29, 59, 70, 99])
        #expect(shell.sent.allSatisfy { $0.priority == .powerConsiderate })
        #expect(shell.engine.counters.lowImportanceDeferrals == 4 && shell.engine.counters.rateLimitDeferrals == 0)
    }

    @Test func theFirstStateAndTheEndAreNeverHeldByTheCadence() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try shell.apply(match(minute: 0), .low, at: t0)
        #expect(seconds(shell) == [0])
        try shell.apply(match(minute: 1), .low, at: t0 + .seconds(5))
        #expect(shell.sent.count == 1)
        try shell.end(match(minute: 2), .low, at: t0 + .seconds(6))
        #expect(seconds(shell) == [0, 6])
        #expect(shell.sent.last?.isEnd == true && shell.sent.last?.minute == 2)
    }

    /// 50 clock ticks a second for a minute: 33 pushes paced uniformly, 3 on the low cadence
    /// (the first state, then one every 30 s with the newest tick).
    @Test func aMinuteOfClockTicksMakesThreePushesInsteadOfThirtyThree() throws {
        for (pacing, expected) in [(policy, 3), (Self.uniform(policy), 33)] {
            var shell = VirtualShell(policy: pacing, start: t0)
            for k in 0..<(50 * 60) {
                try shell.apply(match(minute: 10, tick: Int64(k)), .low, at: t0 + .milliseconds(20 * k))
            }
            shell.advance(to: t0 + .seconds(600))
            #expect(shell.sent.count == expected)
            #expect(shell.sent.last?.contentState["tick"] as? Int == 50 * 60 - 1)
        }
    }

    /// A 429 empties the reserve as well as the shared bucket, and stretches both intervals: the
    /// channel is told it pushes too fast, so critical changes slow down too.
    @Test func aThrottleEmptiesTheReserveToo() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try spendTheSharedBucket(&shell)
        shell.scriptedFailures = [.throttled]
        try shell.apply(match(home: 1, minute: 4), .critical, alert: goalAlert, at: t0 + .milliseconds(500))
        // Blocked for 4 s; then the shared bucket's first token at its doubled interval of 4 s.
        shell.advance(to: t0 + .seconds(5))
        try shell.apply(match(home: 2, minute: 5), .critical, alert: goalAlert)
        shell.advance(to: t0 + .seconds(60))
        #expect(seconds(shell) == [0, 0, 0, 0.5, 4.5, 8.5])
        #expect(shell.engine.counters.reservedPushes == 1 && shell.engine.counters.throttled == 1)
    }

    /// The cadence's anchor and the reserve survive a restart, and a snapshot saved before they
    /// existed still restores (empty reserve, no anchor: the first low change goes at the pace).
    @Test func theCadenceAndTheReserveSurviveARestore() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try shell.apply(match(minute: 0), .normal, at: t0)
        try shell.apply(match(home: 1, minute: 0), .critical, alert: goalAlert, at: t0 + .seconds(1))
        let data = try JSONEncoder().encode(shell.engine.snapshot)
        var restored = shell
        restored.engine = ChannelEngine(policy: policy, storage: .noStorage,
                                        snapshot: try JSONDecoder().decode(ChannelEngine.Snapshot.self, from: data))
        #expect(restored.engine.snapshot == shell.engine.snapshot)
        try restored.apply(match(home: 1, minute: 1), .low, at: t0 + .seconds(2))
        restored.advance(to: t0 + .seconds(100))
        #expect(seconds(restored) == [0, 1, 31])

        var old = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        old["lastAcceptedAt"] = nil
        var limiter = try #require(old["limiter"] as? [String: Any])
        (limiter["reservedTokens"], limiter["reservedRefillAnchor"]) = (nil, nil)
        old["limiter"] = limiter
        var counters = try #require(old["counters"] as? [String: Any])
        (counters["reservedPushes"], counters["lowImportanceDeferrals"]) = (nil, nil)
        old["counters"] = counters
        let upgraded = try JSONDecoder().decode(ChannelEngine.Snapshot.self, from: JSONSerialization.data(withJSONObject: old))
        #expect(upgraded.lastAcceptedAt == nil && upgraded.limiter.reservedTokens == 0 && upgraded.counters.reservedPushes == 0)
        #expect(upgraded.counters.immediatePushes == 1)
    }

    static func uniform(_ policy: ChannelPolicy) -> ChannelPolicy {
        var uniform = policy
        (uniform.criticalBurst, uniform.lowImportanceInterval) = (0, .zero)
        return uniform
    }
}
