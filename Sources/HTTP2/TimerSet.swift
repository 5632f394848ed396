import Dispatch
import TouchlineRuntime

/// Time that moves only when a test moves it, for running a connection without a loop thread.
final class VirtualTime {
    /// Monotonic nanoseconds.
    var now: UInt64

    init(now: UInt64 = 1_000_000_000) {
        self.now = now
    }
}

/// Every timer of one client connection behind one loop timer: a deadline per
/// ``HTTP2ClientTimer`` kind, and the loop timer set for the earliest one.
///
/// One owner for all deadlines means closing cancels them in one call, and a deadline is a number
/// the state machine computed from its injected `now`, not a libevent event of its own. Cancelling
/// is lazy: the loop timer may wake once for a deadline that is gone, finds nothing due and sets
/// itself for the next one. With ``VirtualTime`` there is no loop timer; the test calls
/// ``fireDue()`` after moving the time.
///
/// Loop-confined, like the connection that owns it.
final class TimerSet {
    private static let disarmed = UInt64.max
    private var deadlines = ContiguousArray(repeating: TimerSet.disarmed, count: HTTP2ClientTimer.allCases.count)
    /// The deadline the loop timer is set for.
    private var wakeUp = TimerSet.disarmed
    private var loopTimer: LoopTimer?
    private let virtualTime: VirtualTime?
    /// True while due timers run: deadlines armed meanwhile are picked up once at the end.
    private var firing = false
    /// Runs a timer whose deadline has come; set by the owner.
    var onFire: (HTTP2ClientTimer) -> Void = { _ in }

    init(loop: EventLoop) {
        virtualTime = nil
        loopTimer = LoopTimer(loop: loop) { [unowned self] in fireDue() }
    }

    init(virtualTime: VirtualTime) {
        self.virtualTime = virtualTime
    }

    /// Monotonic nanoseconds, the clock every deadline is on.
    var now: UInt64 { virtualTime?.now ?? DispatchTime.now().uptimeNanoseconds }

    /// The deadline of `kind`, nil when it is not armed.
    func deadline(_ kind: HTTP2ClientTimer) -> UInt64? {
        let deadline = deadlines[kind.rawValue]
        return deadline == TimerSet.disarmed ? nil : deadline
    }

    /// The earliest deadline of any kind.
    var nextDeadline: UInt64? {
        let earliest = deadlines.min() ?? TimerSet.disarmed
        return earliest == TimerSet.disarmed ? nil : earliest
    }

    /// Arms (or re-arms) `kind` for `deadline`; a deadline already past fires on the next loop turn.
    func arm(_ kind: HTTP2ClientTimer, at deadline: UInt64) {
        deadlines[kind.rawValue] = deadline
        if deadline < wakeUp, !firing { setWakeUp(deadline) }
    }

    func cancel(_ kind: HTTP2ClientTimer) {
        deadlines[kind.rawValue] = TimerSet.disarmed
    }

    func cancelAll() {
        for index in deadlines.indices { deadlines[index] = TimerSet.disarmed }
        wakeUp = TimerSet.disarmed
        loopTimer?.cancel()
    }

    /// Applies the state machine's changes to the lifecycle timers.
    func apply(_ changes: TimerChanges) {
        guard !changes.isEmpty else { return }
        apply(changes[.connect], to: .connect)
        apply(changes[.idle], to: .idle)
        apply(changes[.ping], to: .ping)
        apply(changes[.drain], to: .drain)
        apply(changes[.response], to: .response)
    }

    private func apply(_ change: TimerChange, to kind: HTTP2ClientTimer) {
        switch change {
        case .keep: break
        case .cancel: cancel(kind)
        case .arm(let deadline): arm(kind, at: deadline)
        }
    }

    /// Runs every timer whose deadline has come (in the order of the kinds), then sets the loop
    /// timer for the earliest deadline left.
    func fireDue() {
        wakeUp = TimerSet.disarmed
        firing = true
        let now = self.now
        for index in deadlines.indices where deadlines[index] <= now {
            deadlines[index] = TimerSet.disarmed
            onFire(HTTP2ClientTimer(rawValue: index)!)
        }
        firing = false
        if let next = nextDeadline { setWakeUp(next) }
    }

    private func setWakeUp(_ deadline: UInt64) {
        wakeUp = deadline
        guard let loopTimer else { return }
        let now = deadline == 0 ? 0 : self.now
        loopTimer.schedule(after: .nanoseconds(Int64(clamping: deadline > now ? deadline - now : 0)))
    }
}
