import Dispatch
import Synchronization
import TouchlineConfiguration

/// Whether the broadcast path was recently slowed down, for the personal queue to yield to it.
///
/// The ingest loop reports how long an acknowledged event waited for its commit and how long a
/// broadcast waited to reach the broadcast loop. A wait above `threshold` means the host is
/// short of CPU (or disk); for `window` after it, the personal queue keeps at most
/// `PersonalQueueSettings.yieldInFlight` sends in flight, leaving the machine to the goal. With
/// CPU to spare the waits stay in microseconds and a backlog runs at full speed, also during
/// live matches. This one atomic is a signal, not shared state: no loop's data crosses (the
/// hand-offs stay `EventLoop.execute`).
package final class BroadcastPressure: Sendable {
    private let lastPressure = Atomic<UInt64>(0)
    let threshold: Duration
    let window: Duration

    package init(threshold: Duration = .milliseconds(1), window: Duration = .seconds(1)) {
        self.threshold = threshold
        self.window = window
    }

    /// A moment on the broadcast path to measure a wait from.
    package static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Something on the broadcast path started waiting at `start` and got going now (any thread).
    package func observeWait(since start: UInt64) {
        let now = Self.now()
        if now &- start >= UInt64(threshold.inNanoseconds) { lastPressure.store(now, ordering: .relaxed) }
    }

    /// Whether a wait above the threshold happened within the window (any thread).
    var isUnderPressure: Bool {
        let last = lastPressure.load(ordering: .relaxed)
        return last > 0 && Self.now() &- last < UInt64(window.inNanoseconds)
    }
}
