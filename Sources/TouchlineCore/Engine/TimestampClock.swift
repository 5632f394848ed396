/// Hands out the `aps.timestamp` of a channel's pushes: Unix seconds, strictly increasing.
///
/// The device keeps the update with the newest timestamp, so two pushes in the same second, or a
/// wall clock that steps backwards, must never produce an equal or older stamp: the next stamp is
/// `max(now, last + 1)`. Bursts therefore run at most a few seconds ahead of the wall clock and
/// fall back in step as soon as the pace drops below one push per second.
public struct TimestampClock: Sendable, Equatable, Codable {
    /// The last stamp handed out (Unix seconds); persisted so a restart cannot go back.
    public private(set) var last: Int64?

    public init(last: Int64? = nil) { self.last = last }

    /// The stamp `next(now:)` would return, without taking it (used to size a payload).
    public func peek(now: UnixTime) -> UnixTime {
        guard let last else { return UnixTime(seconds: now.seconds) }
        return UnixTime(seconds: max(now.seconds, last + 1))
    }

    /// Takes the next stamp.
    public mutating func next(now: UnixTime) -> UnixTime {
        let stamp = peek(now: now)
        last = stamp.seconds
        return stamp
    }
}
