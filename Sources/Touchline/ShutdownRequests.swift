import Synchronization

/// Requests to stop a running gateway (``Gateway/run(until:started:)``): the first asks for a
/// graceful shutdown, a second one during it escalates to an immediate stop.
///
/// An immediate stop is still consistent: it only gives up the grace periods. Requests still
/// unanswered are abandoned (none was acknowledged), pushes still unanswered stay pending in the
/// channels' snapshots and personal jobs keep their saved progress, webhook attempts stay
/// pending; what is queued for the stores is still committed before they close.
public final class ShutdownRequests: Sendable {
    private struct State {
        var count = 0
        var firstAt: ContinuousClock.Instant?
        var reasons: [String] = []
        var waiters: [(id: Int, needed: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var nextWaiter = 0
        /// Waits whose task was cancelled before they were registered.
        var cancelled: Set<Int> = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Asks for the stop (`reason` is logged, e.g. the signal's name); a second call escalates.
    public func request(_ reason: String) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count += 1
            if state.firstAt == nil { state.firstAt = .now }
            state.reasons.append(reason)
            let due = state.waiters.filter { $0.needed <= state.count }.map(\.continuation)
            state.waiters.removeAll { $0.needed <= state.count }
            return due
        }
        for continuation in ready { continuation.resume() }
    }

    /// When the first request came (nil before): the shutdown's duration is measured from it.
    public var stoppedAt: ContinuousClock.Instant? { state.withLock { $0.firstAt } }

    /// Why the stop was asked for: the reasons in order.
    public var reasons: [String] { state.withLock { $0.reasons } }

    /// True once a second request came: every grace is cut short.
    public var isEscalated: Bool { state.withLock { $0.count >= 2 } }

    /// Returns once the first request has come.
    func firstRequest() async { await requests(1) }

    /// Returns once a second request has come, or at once when the awaiting task is cancelled.
    func escalation() async { await requests(2) }

    private func requests(_ needed: Int) async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { state -> Bool in
                    guard state.count < needed, !state.cancelled.contains(id) else { return false }
                    state.waiters.append((id, needed, continuation))
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            let released = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.cancelled.insert(id)
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            released?.resume()
        }
    }
}
