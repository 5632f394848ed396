import CLibevent
import TouchlineCore

/// A re-armable timer on one loop. Loop-confined: create, arm and cancel it on its loop's thread.
///
/// The owner keeps the timer alive; releasing it cancels it.
public final class LoopTimer: @unchecked Sendable {
    private var event: OpaquePointer?
    private let callback: () -> Void
    /// Keeps the `event_base` alive until the event is freed.
    private let loop: EventLoop

    public init(loop: EventLoop, _ callback: @escaping () -> Void) {
        self.loop = loop
        self.callback = callback
        event = event_new(loop.base, -1, 0, { _, _, ctx in
            Unmanaged<LoopTimer>.fromOpaque(ctx!).takeUnretainedValue().callback()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { if let event { event_free(event) } }

    /// Arms (or re-arms) the timer to fire once after `delay`.
    public func schedule(after delay: Duration) {
        // Rounded up to libevent's microseconds: a timer never fires before its delay (callers
        // compare deadlines in nanoseconds and would otherwise find nothing due yet).
        let ns = max(0, delay.inNanoseconds)
        let us = (ns + 999) / 1000
        var tv = timeval(tv_sec: Int(us / 1_000_000), tv_usec: Int(us % 1_000_000))
        event_add(event, &tv)
    }

    /// Disarms the timer; harmless when it is not armed.
    public func cancel() { event_del(event) }

    /// True while the timer is armed.
    public var isScheduled: Bool { event_pending(event, Int16(EV_TIMEOUT), nil) != 0 }
}

/// Watches a file descriptor for readiness on one loop until released or stopped. Loop-confined.
public final class FDWatcher: @unchecked Sendable {
    public struct Readiness: OptionSet, Sendable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        public static let readable = Readiness(rawValue: Int16(EV_READ))
        public static let writable = Readiness(rawValue: Int16(EV_WRITE))
    }

    private var event: OpaquePointer?
    private let callback: (Readiness) -> Void
    /// Keeps the `event_base` alive until the event is freed.
    private let loop: EventLoop

    /// Watches `fd` for `interest` (from now on, or from the first ``resume()`` when `watching` is
    /// false); `callback` runs on the loop each time the fd is ready.
    public init(loop: EventLoop, fd: Int32, interest: Readiness, watching: Bool = true, _ callback: @escaping (Readiness) -> Void) {
        self.loop = loop
        self.callback = callback
        event = event_new(loop.base, fd, interest.rawValue | Int16(EV_PERSIST), { _, what, ctx in
            Unmanaged<FDWatcher>.fromOpaque(ctx!).takeUnretainedValue().callback(Readiness(rawValue: what))
        }, Unmanaged.passUnretained(self).toOpaque())
        isWatching = watching
        if watching { event_add(event, nil) }
    }

    /// True while the descriptor is watched (from creation until ``stop()``, again after ``resume()``).
    public private(set) var isWatching = true

    /// Stops watching; the fd itself is left open (it belongs to the caller). Harmless when
    /// stopped already (no system call then).
    public func stop() {
        guard isWatching else { return }
        isWatching = false
        event_del(event)
    }

    /// Watches again after ``stop()``; harmless when watching already.
    public func resume() {
        guard !isWatching else { return }
        isWatching = true
        event_add(event, nil)
    }

    deinit { if let event { event_free(event) } }
}
