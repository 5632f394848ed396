/// Latencies grouped by the interval in which they were observed, each interval a
/// ``LatencyHistogram``: how p99 moved during a run, not only what it was overall.
///
/// Recording is O(1); it allocates only when a sample opens a new interval (once per interval,
/// never per sample). Timelines of the same ``MeasurementPeriod`` merge interval by interval.
public struct LatencyTimeline: Sendable, Codable, Equatable {
    public let period: MeasurementPeriod
    /// `intervals[i]` holds the samples observed in interval `i` of the period.
    public private(set) var intervals: [LatencyHistogram] = []

    public init(period: MeasurementPeriod) {
        self.period = period
    }

    /// Adds a latency observed at `time` (Unix ns).
    public mutating func record(_ nanoseconds: Int64, at time: Int64) {
        let index = period.interval(at: time)
        if index >= intervals.count { intervals += repeatElement(LatencyHistogram(), count: index + 1 - intervals.count) }
        intervals[index].record(nanoseconds)
    }

    /// Every sample in one histogram.
    public var histogram: LatencyHistogram {
        intervals.reduce(into: LatencyHistogram()) { $0.merge($1) }
    }

    /// Samples recorded, over all intervals.
    public var count: Int { intervals.reduce(0) { $0 + $1.count } }

    /// The `p` percentile (0...100) of each interval, in milliseconds; 0 for an interval
    /// without samples.
    public func percentile(_ p: Double) -> TimeSeries {
        TimeSeries(intervalSeconds: period.intervalSeconds, values: intervals.map { Double($0.percentile(p)) / 1e6 })
    }

    /// Adds every sample of `other`, which must have the same period.
    public mutating func merge(_ other: LatencyTimeline) {
        precondition(other.period == period, "only timelines of the same period merge")
        if other.intervals.count > intervals.count {
            intervals += repeatElement(LatencyHistogram(), count: other.intervals.count - intervals.count)
        }
        for (index, histogram) in other.intervals.enumerated() { intervals[index].merge(histogram) }
    }
}
