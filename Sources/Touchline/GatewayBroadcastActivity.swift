import Dispatch
import Synchronization

/// When broadcast work last started, for the personal queue to yield to it.
///
/// The ingest loop notes every acknowledged event; the personal loop reads the time before it
/// starts new sends and, within `window` of broadcast work, keeps at most
/// `PersonalQueueSettings.yieldInFlight` sends in flight. On a host short of CPU a backlog then
/// leaves the cores to the goal. This one atomic is a signal, not shared state: neither loop's
/// data crosses (the hand-offs stay `EventLoop.execute`).
final class GatewayBroadcastActivity: Sendable {
    private let lastNanoseconds = Atomic<UInt64>(0)
    let window: Duration

    init(window: Duration = .seconds(1)) {
        self.window = window
    }

    /// Broadcast work started now (any thread).
    func note() {
        lastNanoseconds.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }

    /// Whether broadcast work started within the window (any thread).
    var isRecent: Bool {
        let last = lastNanoseconds.load(ordering: .relaxed)
        guard last > 0 else { return false }
        return DispatchTime.now().uptimeNanoseconds - last < UInt64(window.inNanoseconds)
    }
}
