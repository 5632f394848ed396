import Testing
import TouchlineRuntime

/// The listener's pause after `accept()` runs out of descriptors: short at first, doubling while
/// failures keep coming, capped, and short again once they stop.
@Suite struct AcceptBackoffTests {
    @Test func pausesDoubleWhileFailuresContinueUpToTheMaximum() {
        var backoff = AcceptBackoff(initial: .milliseconds(10), maximum: .milliseconds(80))
        var now = ContinuousClock.now
        var pauses: [Duration] = []
        for _ in 0..<6 {
            let pause = backoff.pause(afterFailureAt: now)
            pauses.append(pause)
            now += pause
        }
        #expect(pauses == [10, 20, 40, 80, 80, 80].map { .milliseconds($0) })
    }

    @Test func aQuietSpellStartsAgainFromTheInitialPause() {
        var backoff = AcceptBackoff(initial: .milliseconds(10), maximum: .milliseconds(80))
        let start = ContinuousClock.now
        _ = backoff.pause(afterFailureAt: start)
        #expect(backoff.pause(afterFailureAt: start + .milliseconds(10)) == .milliseconds(20))
        #expect(backoff.pause(afterFailureAt: start + .seconds(5)) == .milliseconds(10))
    }
}
