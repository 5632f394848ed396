/// Lets a repeating alert through at most once per `interval` for each key (an APNs reason, a
/// channel), so a fact that recurs on every request (credentials rejected on every push, a
/// channel limit hit by every create) makes one webhook event per interval, not thousands.
///
/// Pure: the time is passed in. Keys are bounded by their callers (APNs reasons, channel ids
/// under Apple's 10,000 limit); entries older than the interval are dropped as new ones come.
public struct WebhookAlertThrottle: Sendable, Equatable {
    public var interval: Duration
    private var lastAdmitted: [String: UnixTime] = [:]

    public init(interval: Duration) { self.interval = interval }

    /// True when `key` was not admitted within the interval before `now` (and records it).
    public mutating func admit(_ key: String, now: UnixTime) -> Bool {
        if let last = lastAdmitted[key], now - last < interval, now >= last { return false }
        if lastAdmitted.count >= 1_024 { lastAdmitted = lastAdmitted.filter { now - $0.value < interval } }
        lastAdmitted[key] = now
        return true
    }
}
