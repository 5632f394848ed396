/// The percentiles a report shows for one latency, in milliseconds.
///
/// What every part of the load tools hands to the report: the histograms that produce it keep
/// full resolution, the report needs only these figures.
public struct LatencySummary: Sendable, Codable, Equatable {
    public var count: Int
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var p999: Double
    public var max: Double

    public init(count: Int, p50: Double, p90: Double, p99: Double, p999: Double, max: Double) {
        (self.count, self.p50, self.p90, self.p99, self.p999, self.max) = (count, p50, p90, p99, p999, max)
    }
}
