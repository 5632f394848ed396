import Foundation
import Testing
import TouchlineCore

@Suite struct RateLimiterTests {
    let t0 = UnixTime(seconds: 1_767_290_400)
    let steadyBackoff = Backoff(initial: .seconds(4), maximum: .seconds(60), multiplier: 2, jitter: 0)

    func limiter(burst: Int = 3) -> RateLimiter {
        RateLimiter(burst: burst, minimumInterval: .seconds(2), backoff: steadyBackoff, now: t0)
    }

    @Test func aFullBucketAllowsTheBurstThenOnePushPerInterval() {
        var limiter = limiter()
        for _ in 0..<3 {
            #expect(limiter.nextAllowed(now: t0) == t0)
            do { let allowed = limiter.consume(now: t0) != nil; #expect(allowed) }
        }
        #expect(limiter.nextAllowed(now: t0) == t0 + .seconds(2))
        do { let allowed = limiter.consume(now: t0 + .milliseconds(1999)) != nil; #expect(!allowed) }
        do { let allowed = limiter.consume(now: t0 + .seconds(2)) != nil; #expect(allowed) }
        #expect(limiter.nextAllowed(now: t0 + .seconds(2)) == t0 + .seconds(4))
    }

    @Test func partialRefillKeepsItsProgress() {
        var limiter = limiter()
        for _ in 0..<3 { limiter.consume(now: t0) }
        // 3 s later one token has accrued (at 2 s) and the next is due at 4 s, not at 5 s.
        do { let allowed = limiter.consume(now: t0 + .seconds(3)) != nil; #expect(allowed) }
        #expect(limiter.nextAllowed(now: t0 + .seconds(3)) == t0 + .seconds(4))
    }

    @Test func theBucketNeverHoldsMoreThanTheBurst() {
        var limiter = limiter()
        let later = t0 + .seconds(3600)
        for _ in 0..<3 { do { let allowed = limiter.consume(now: later) != nil; #expect(allowed) } }
        do { let allowed = limiter.consume(now: later) != nil; #expect(!allowed) }
    }

    @Test func aThrottleBlocksForTheBackoffDelayAndDoublesTheInterval() {
        var limiter = limiter()
        var random = SplitMix64(seed: 1)
        limiter.consume(now: t0)
        limiter.recordThrottle(now: t0, using: &random)
        #expect(limiter.interval == .seconds(4))
        #expect(limiter.nextAllowed(now: t0) == t0 + .seconds(4))
        do { let allowed = limiter.consume(now: t0 + .seconds(4)) != nil; #expect(allowed) }
        #expect(limiter.nextAllowed(now: t0 + .seconds(4)) == t0 + .seconds(8))

        limiter.recordThrottle(now: t0 + .seconds(4), using: &random)
        #expect(limiter.interval == .seconds(8))
        // Second failure in a row: the back-off delay doubles too.
        #expect(limiter.nextAllowed(now: t0 + .seconds(4)) == t0 + .seconds(12))
    }

    @Test func theThrottledIntervalIsCappedAtTheBackoffMaximum() {
        var limiter = limiter()
        var random = SplitMix64(seed: 1)
        for _ in 0..<40 { limiter.recordThrottle(now: t0, using: &random) }
        #expect(limiter.interval == .seconds(60))
        #expect(limiter.state.throttleLevel == 5)
    }

    @Test func fourSuccessesUndoOneThrottleStep() {
        var limiter = limiter()
        var random = SplitMix64(seed: 1)
        limiter.recordThrottle(now: t0, using: &random)
        limiter.recordThrottle(now: t0, using: &random)
        #expect(limiter.interval == .seconds(8))
        for _ in 0..<3 { limiter.recordSuccess() }
        #expect(limiter.interval == .seconds(8))
        limiter.recordSuccess()
        #expect(limiter.interval == .seconds(4))
        for _ in 0..<4 { limiter.recordSuccess() }
        #expect(limiter.interval == .seconds(2))
        #expect(limiter.state.consecutiveFailures == 0)
    }

    @Test func aTransientFailureDelaysWithoutSlowingThePace() {
        var limiter = limiter()
        var random = SplitMix64(seed: 1)
        limiter.recordTransientFailure(now: t0, using: &random)
        #expect(limiter.interval == .seconds(2))
        #expect(limiter.nextAllowed(now: t0) == t0 + .seconds(4))
        do { let allowed = limiter.consume(now: t0 + .seconds(4)) != nil; #expect(allowed) }
        do { let allowed = limiter.consume(now: t0 + .seconds(4)) != nil; #expect(allowed) }
    }

    @Test func aClockSteppingBackDoesNotStallTheChannel() {
        var limiter = limiter()
        for _ in 0..<3 { limiter.consume(now: t0) }
        let earlier = t0 - .seconds(3600)
        #expect(limiter.nextAllowed(now: earlier) == earlier + .seconds(2))
        limiter.refill(now: earlier)
        do { let allowed = limiter.consume(now: earlier + .seconds(2)) != nil; #expect(allowed) }
        var random = SplitMix64(seed: 1)
        limiter.recordThrottle(now: t0, using: &random)
        // The back-off deadline is clamped to now + maximum however far the clock went back.
        #expect(limiter.nextAllowed(now: earlier) <= earlier + .seconds(60))
    }

    @Test func stateSurvivesAJSONRoundTrip() throws {
        var limiter = limiter()
        var random = SplitMix64(seed: 1)
        limiter.consume(now: t0)
        limiter.recordThrottle(now: t0 + .milliseconds(300), using: &random)
        let data = try JSONEncoder().encode(limiter.state)
        let restored = RateLimiter(burst: 3, minimumInterval: .seconds(2), backoff: steadyBackoff,
                                   state: try JSONDecoder().decode(RateLimiter.State.self, from: data))
        #expect(restored == limiter)
    }
}

extension UnixTime {
    /// The time `duration` earlier (for wall clocks stepping back in tests).
    static func - (time: UnixTime, duration: Duration) -> UnixTime {
        UnixTime(nanoseconds: time.nanoseconds - duration.inNanoseconds)
    }
}
