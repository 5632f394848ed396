import Synchronization

/// A point in wall-clock time, in nanoseconds since the Unix epoch.
///
/// APNs speaks Unix seconds (JWT `iat`, `timestamp`, `apns-expiration`), so the core keeps
/// wall time rather than a monotonic instant; tests drive it with a `ManualClock`.
public struct UnixTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    /// Saturates at the representable range (about the years 1677 to 2262) instead of trapping,
    /// since seconds can come from outside (provider input, stored data).
    public init(seconds: Int64) {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self.nanoseconds = overflow ? (seconds < 0 ? .min : .max) : product
    }

    /// Whole seconds since the epoch, rounded down: the unit APNs uses.
    public var seconds: Int64 { nanoseconds / 1_000_000_000 }

    public static func < (a: UnixTime, b: UnixTime) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: UnixTime, d: Duration) -> UnixTime { UnixTime(nanoseconds: a.nanoseconds + d.inNanoseconds) }
    public static func - (a: UnixTime, b: UnixTime) -> Duration { .nanoseconds(a.nanoseconds - b.nanoseconds) }
    public var description: String { "\(seconds).\(String(nanoseconds % 1_000_000_000).leftPadded(to: 9))" }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating far beyond any timer this project arms).
    public var inNanoseconds: Int64 {
        let (s, atto) = components
        return s * 1_000_000_000 + atto / 1_000_000_000
    }

    /// The duration in whole milliseconds, rounded down.
    public var inMilliseconds: Int64 { inNanoseconds / 1_000_000 }

    /// The duration in seconds as a floating-point value, for reports and jitter arithmetic.
    public var inSeconds: Double { Double(inNanoseconds) / 1e9 }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// The source of "now" for every time-dependent rule, injected so that rules run in virtual time in tests.
public protocol WallClock: Sendable {
    func now() -> UnixTime
}

/// The real clock.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> UnixTime {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UnixTime(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}

/// A clock that only moves when told to: virtual time for tests.
public final class ManualClock: WallClock {
    private let current: Mutex<UnixTime>

    public init(_ start: UnixTime = UnixTime(seconds: 1_767_225_600)) { current = Mutex(start) }

    public func now() -> UnixTime { current.withLock { $0 } }

    public func advance(by d: Duration) { current.withLock { $0 = $0 + d } }

    public func set(_ t: UnixTime) { current.withLock { $0 = t } }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
