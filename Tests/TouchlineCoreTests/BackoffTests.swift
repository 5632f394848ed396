import Testing
import TouchlineCore

@Suite struct BackoffTests {
    @Test func growsExponentiallyWithoutJitter() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(10), multiplier: 2, jitter: 0)
        var rng = SplitMix64(seed: 1)
        var delays: [Duration] = []
        for attempt in 0..<5 { delays.append(backoff.delay(attempt: attempt, using: &rng)) }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600)])
    }

    @Test func isCappedAtTheMaximum() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: 0)
        var rng = SplitMix64(seed: 1)
        #expect(backoff.delay(attempt: 10, using: &rng) == .seconds(1))
        #expect(backoff.delay(attempt: 10_000, using: &rng) == .seconds(1))
    }

    @Test func jitterStaysWithinItsFractionAndVaries() {
        let backoff = Backoff(initial: .seconds(1), maximum: .seconds(1), multiplier: 2, jitter: 0.5)
        var rng = SplitMix64(seed: 42)
        var delays: [Duration] = []
        for _ in 0..<200 { delays.append(backoff.delay(attempt: 3, using: &rng)) }
        #expect(delays.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(1) })
        #expect(Set(delays.map { $0.inNanoseconds }).count > 100)
    }
}

@Suite struct WallClockTests {
    @Test func manualClockMovesOnlyWhenTold() {
        let clock = ManualClock(UnixTime(seconds: 1000))
        #expect(clock.now() == UnixTime(seconds: 1000))
        clock.advance(by: .seconds(90))
        #expect(clock.now().seconds == 1090)
        #expect(clock.now() - UnixTime(seconds: 1000) == .seconds(90))
    }

    @Test func secondsOutsideTheRepresentableRangeSaturate() {
        #expect(UnixTime(seconds: .max).nanoseconds == .max)
        #expect(UnixTime(seconds: .min).nanoseconds == .min)
        #expect(UnixTime(seconds: 10_000_000_000).nanoseconds == .max)
        #expect(UnixTime(seconds: 1_767_225_600).seconds == 1_767_225_600)
    }

    @Test func systemClockIsNearTheEpochWeExpect() {
        // 2025-01-01 as a floor: a clock before it is broken for JWT iat purposes.
        #expect(SystemClock().now().seconds > 1_735_689_600)
    }
}
