/// Values at a fixed interval from the start of a phase: a rate per second, a latency
/// percentile, a CPU share. `values[i]` covers `[i * intervalSeconds, (i + 1) * intervalSeconds)`.
///
/// Charts and result files take this one shape, whatever was measured.
public struct TimeSeries: Sendable, Codable, Equatable {
    public var intervalSeconds: Double
    public var values: [Double]

    public init(intervalSeconds: Double, values: [Double]) {
        self.intervalSeconds = intervalSeconds
        self.values = values
    }
}
