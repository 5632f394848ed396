/// The clock of a measurement: when it started (Unix nanoseconds) and how long each interval of
/// its time series lasts. Interval `i` covers `[start + i * interval, start + (i + 1) * interval)`.
///
/// Series that share a period line up interval by interval, so they can be merged (one per
/// worker thread) and charted together.
public struct MeasurementPeriod: Sendable, Codable, Equatable {
    /// Unix time in nanoseconds.
    public var startNanoseconds: Int64
    public var intervalNanoseconds: Int64

    /// `intervalNanoseconds` must be positive; the default interval is one second.
    public init(startNanoseconds: Int64, intervalNanoseconds: Int64 = 1_000_000_000) {
        precondition(intervalNanoseconds > 0, "a measurement interval must be positive")
        self.startNanoseconds = startNanoseconds
        self.intervalNanoseconds = intervalNanoseconds
    }

    public var intervalSeconds: Double { Double(intervalNanoseconds) / 1e9 }

    /// The interval holding `time` (Unix ns); a time before the start (a sample stamped just
    /// before the period began) counts in the first interval.
    @inline(__always)
    public func interval(at time: Int64) -> Int {
        time <= startNanoseconds ? 0 : Int((time - startNanoseconds) / intervalNanoseconds)
    }
}
