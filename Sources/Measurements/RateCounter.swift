/// Events counted by the interval in which they happened: a throughput over time.
///
/// Recording is O(1); the counts grow by one entry per interval (amortised, never per event).
/// Counters of the same ``MeasurementPeriod`` merge interval by interval.
public struct RateCounter: Sendable, Codable, Equatable {
    public let period: MeasurementPeriod
    /// `counts[i]` events happened in interval `i` of the period.
    public private(set) var counts: [Int] = []

    public init(period: MeasurementPeriod) {
        self.period = period
    }

    /// Counts `events` at `time` (Unix ns).
    public mutating func record(at time: Int64, events: Int = 1) {
        let index = period.interval(at: time)
        if index >= counts.count { counts += repeatElement(0, count: index + 1 - counts.count) }
        counts[index] += events
    }

    /// Events over all intervals.
    public var total: Int { counts.reduce(0, +) }

    /// Events per second in each interval.
    public var perSecond: TimeSeries {
        TimeSeries(intervalSeconds: period.intervalSeconds, values: counts.map { Double($0) / period.intervalSeconds })
    }

    /// Adds every event of `other`, which must have the same period.
    public mutating func merge(_ other: RateCounter) {
        precondition(other.period == period, "only counters of the same period merge")
        if other.counts.count > counts.count { counts += repeatElement(0, count: other.counts.count - counts.count) }
        for (index, n) in other.counts.enumerated() { counts[index] += n }
    }
}
