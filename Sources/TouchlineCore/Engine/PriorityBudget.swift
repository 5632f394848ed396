/// A channel's rolling-hour allowance of priority-10 pushes.
///
/// Priority 10 wakes the device at once and counts against the activity's hourly ActivityKit
/// budget; overspending gets the activity throttled. The gateway therefore keeps its own, stricter
/// count: the exact time of each priority-10 push in the window (at most `limit` of them), so the
/// window rolls to the nanosecond rather than in hourly buckets. The spend times are the whole
/// state and are persisted as they are.
public struct PriorityBudget: Sendable, Equatable {
    /// Priority-10 pushes allowed in any window.
    public let limit: Int
    /// The rolling window (an hour for ActivityKit).
    public let window: Duration
    /// Times of the priority-10 pushes still inside the window, oldest first.
    public private(set) var spends: [UnixTime]

    public init(limit: Int, window: Duration = .seconds(3600), spends: [UnixTime] = []) {
        self.limit = limit
        self.window = window
        self.spends = spends
    }

    /// Pushes counted at `now`: a push at `t` counts while `now < t + window`. A spend stamped
    /// after `now` (the wall clock stepped back) keeps counting: the budget errs on the safe side.
    public func used(now: UnixTime) -> Int {
        spends.reduce(0) { $0 + ($1 + window > now ? 1 : 0) }
    }

    public func remaining(now: UnixTime) -> Int { max(0, limit - used(now: now)) }

    public func canSpend(now: UnixTime) -> Bool { used(now: now) < limit }

    /// Records a priority-10 push at `now` if the budget allows it; false (and no change) if not.
    @discardableResult
    public mutating func spend(now: UnixTime) -> Bool {
        spends.removeAll { $0 + window <= now }
        guard spends.count < limit else { return false }
        spends.append(now)
        return true
    }

    /// Gives back the spend made at `time`: the push it paid for was not accepted by APNs, so it
    /// cannot have counted on any device.
    public mutating func refund(spentAt time: UnixTime) {
        if let index = spends.lastIndex(of: time) { spends.remove(at: index) }
    }
}
