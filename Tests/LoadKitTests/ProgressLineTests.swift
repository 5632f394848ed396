import LoadKit
import Testing

@Suite struct ProgressLineTests {
    @Test func theLineSaysWhereTheRunIsAndWhatItDoes() {
        let line = ProgressLine(scenario: "matchday", phase: "default policy", elapsedSeconds: 83.7, remainingSeconds: 130.2,
                                requestsPerSecond: 1337.4, p99Milliseconds: 2.134, matchesEnded: (120, 300))
        #expect(line.rendered() == "matchday · default policy · 1:23 elapsed, ~2:10 left · 1,337 req/s · p99 2.13 ms · 120/300 matches ended")
        #expect(ProgressLine(scenario: "soak", elapsedSeconds: 3725, requestsPerSecond: 0).rendered() == "soak · 1:02:05 elapsed · 0 req/s")
        // Past its expected end a phase shows nothing left, never a negative time.
        #expect(ProgressLine(scenario: "x", elapsedSeconds: 5, remainingSeconds: -3).rendered() == "x · 0:05 elapsed, ~0:00 left · 0 req/s")
    }

    /// A terminal line that wraps cannot be redrawn in place: the line is cut to the width.
    @Test func theLineFitsTheTerminal() {
        let line = ProgressLine(scenario: "matchday", phase: "uniform pacing (baseline)", elapsedSeconds: 10, requestsPerSecond: 300,
                                p99Milliseconds: 1, matchesEnded: (0, 300))
        let cut = line.rendered(width: 40)
        #expect(cut.count == 40 && cut.hasSuffix("…") && cut.hasPrefix("matchday · uniform pacing"))
    }
}
