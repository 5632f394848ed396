import CLibevent
import Foundation
import Testing
import TestSlots
import TouchlineRuntime

/// libevent's own messages arrive as JSON log lines, rate-limited; the limiter and the
/// descriptor limit on their own.
@Suite("libevent log and process limits")
struct LibeventLogTests {
    @Test func aRateLimiterLetsTheFirstLinesOfEachIntervalThroughAndCountsTheRest() {
        var limiter = LogRateLimiter(maxLines: 2, per: .seconds(1))
        let start = ContinuousClock.now
        #expect(limiter.admit(at: start) == 0)
        #expect(limiter.admit(at: start + .milliseconds(10)) == 0)
        #expect(limiter.admit(at: start + .milliseconds(20)) == nil)
        #expect(limiter.admit(at: start + .milliseconds(30)) == nil)
        // The next interval's first line reports the two dropped.
        #expect(limiter.admit(at: start + .seconds(1)) == 2)
        #expect(limiter.admit(at: start + .seconds(1) + .milliseconds(1)) == 0)
    }

    @Test(.heavy) func libeventWarningsBecomeRateLimitedJSONLines() async throws {
        let lines = GatewayLogTests.Lines()
        LibeventLog.install(log: GatewayLog(component: "gateway", level: .info, output: lines.output))
        // Installed explicitly: a gateway starting meanwhile in another test does not take the sink.
        defer { LibeventLog.resetToDefault() }
        _ = EventLoop(name: "log-test")
        // Each failed call makes libevent warn; a burst must not flood the log.
        for _ in 0..<50 { _ = evutil_make_socket_nonblocking(-1) }
        let burst = try lines.objects()
        #expect((1...LibeventLog.maxLinesPerSecond).contains(burst.count), "\(burst.count) lines")
        #expect(burst.allSatisfy { $0["component"] == "libevent" && $0["level"] == "warning" })
        #expect(burst.first?["message"]?.contains("fcntl") == true, "\(burst)")
        try await Task.sleep(for: .milliseconds(1100))
        _ = evutil_make_socket_nonblocking(-1)
        // libevent's log callback is one per process: tests running beside this one may add
        // lines of their own, so what is looked for is this test's line and the summary.
        let after = try lines.objects().dropFirst(burst.count)
        #expect(after.contains { $0["message"]?.contains("fcntl") == true }, "\(after)")
        #expect(after.contains { $0["message"]?.contains("libevent messages dropped by the rate limit") == true }, "\(after)")
    }

    @Test(.heavy) func theOpenFileLimitIsRaisedToTheHardLimit() throws {
        let change = try #require(DescriptorLimit.raiseToHardLimit())
        let now = try #require(DescriptorLimit.current())
        #expect(now.soft == change.current)
        #expect(change.current >= change.previous)
        #expect(now.hard == change.hard)
    }
}
