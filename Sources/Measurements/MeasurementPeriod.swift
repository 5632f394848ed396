/// The clock of a measurement: when it started (Unix nanoseconds) and how long each interval of
/// its time series lasts. Interval `i` covers `[start + i * interval, start + (i + 1) * interval)`.
///
/// Series that share a period line up interval by interval, so they can be merged (one per
/// worker thread) and charted together.
public struct MeasurementPeriod: Sendable, Equatable {
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

extension MeasurementPeriod: Codable {
    private enum CodingKeys: String, CodingKey {
        case startNanoseconds, intervalNanoseconds
    }

    /// Refuses an interval that is not positive, which ``interval(at:)`` could not divide by.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let interval = try container.decode(Int64.self, forKey: .intervalNanoseconds)
        guard interval > 0 else {
            throw DecodingError.dataCorruptedError(forKey: .intervalNanoseconds, in: container, debugDescription: "the interval must be positive")
        }
        self.init(startNanoseconds: try container.decode(Int64.self, forKey: .startNanoseconds), intervalNanoseconds: interval)
    }
}
