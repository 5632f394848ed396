/// How long a listener rests after `accept()` failed for lack of descriptors or memory (EMFILE,
/// ENFILE, ENOBUFS, ENOMEM). Pure: the caller passes the time.
///
/// Accepting again at once would fail again at once: libevent would call back on every turn of
/// the loop and spin a CPU while the limit lasts. Instead the listener stops watching its socket
/// for a pause that starts at ``initial`` and doubles while failures keep coming, up to
/// ``maximum``; pending connections wait in the kernel's backlog meanwhile. Failures more than
/// two maximum pauses apart start again from ``initial``.
public struct AcceptBackoff: Sendable, Equatable {
    public let initial: Duration
    public let maximum: Duration
    private var lastPause: Duration?
    private var lastFailure: ContinuousClock.Instant?

    public init(initial: Duration = .milliseconds(10), maximum: Duration = .seconds(1)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The pause to take after a failure at `now`.
    public mutating func pause(afterFailureAt now: ContinuousClock.Instant) -> Duration {
        let pause: Duration
        if let lastPause, let lastFailure, now - lastFailure <= maximum * 2 {
            pause = min(lastPause * 2, maximum)
        } else {
            pause = initial
        }
        lastPause = pause
        lastFailure = now
        return pause
    }
}
