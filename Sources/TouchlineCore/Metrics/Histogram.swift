/// A histogram with fixed bucket bounds, as Prometheus keeps them: counts per bucket, the sum and
/// the count of observations. Plain value: each owner (one loop) keeps its own and merges them
/// when the metrics are collected.
public struct Histogram: Sendable, Equatable {
    /// Upper bounds of the buckets, increasing; the `+Inf` bucket is implied.
    public let bounds: [Double]
    /// Observations per bucket (not cumulative); the last entry is the `+Inf` overflow.
    public private(set) var bucketCounts: [UInt64]
    public private(set) var sum: Double = 0
    public private(set) var count: UInt64 = 0

    /// Seconds from 1 ms to 30 s: APNs answers in a few ms when healthy and in seconds when not;
    /// ingest-to-APNs latency includes rate-limit waits of several seconds.
    public static let latencyBounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public init(bounds: [Double] = Histogram.latencyBounds) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "bucket bounds must increase")
        self.bounds = bounds
        bucketCounts = Array(repeating: 0, count: bounds.count + 1)
    }

    public mutating func observe(_ value: Double) {
        let index = bounds.firstIndex { value <= $0 } ?? bounds.count
        bucketCounts[index] += 1
        sum += value
        count += 1
    }

    /// Observations at or below each bound, then the total (the `+Inf` bucket): Prometheus' `le` buckets.
    public var cumulativeCounts: [UInt64] {
        var running: UInt64 = 0
        return bucketCounts.map { running += $0; return running }
    }

    /// Adds `other`'s observations; both must have the same bounds.
    public mutating func merge(_ other: Histogram) {
        precondition(other.bounds == bounds, "merging histograms with different buckets")
        for index in bucketCounts.indices { bucketCounts[index] += other.bucketCounts[index] }
        sum += other.sum
        count += other.count
    }
}
