/// Latencies in nanoseconds, counted in buckets whose width grows with the value, so that every
/// percentile is within 0.4% of the true sample while recording stays O(1) at any rate.
///
/// The layout is HDR-style log-linear: values below 256 ns have a bucket each; above, every
/// power of two `[2^e, 2^(e+1))` is split into 128 equal buckets of width `2^(e-7)`. A percentile
/// reports the middle of its bucket, at most half a width (1/256 of the value) from any sample in
/// it, clamped to the recorded min and max (so p0 and p100 are exact). The range goes to
/// 2^42 ns (about 73 minutes); larger values count in the top bucket and still set ``max``.
///
/// The buckets (36 KB) are allocated by the first sample, once: later samples never allocate,
/// and an empty histogram costs nothing. Encodes sparsely (only non-empty buckets) so a process
/// can print one as a JSON line.
public struct LatencyHistogram: Sendable, Equatable {
    /// log2 of the buckets per power of two.
    static let subBucketBits = 7
    static let subBucketCount = 1 << subBucketBits
    /// Values below this have a bucket each.
    static let exactLimit = Int64(2 * subBucketCount)
    /// The largest value with buckets of its own; larger ones share its bucket.
    public static let highestTrackable: Int64 = (1 << 42) - 1
    static let bucketCount = bucketIndex(of: highestTrackable) + 1

    /// Empty until the first sample; then `bucketCount` long.
    private var counts: [Int] = []
    /// Samples recorded.
    public private(set) var count = 0
    /// The smallest sample; 0 when empty.
    public private(set) var min: Int64 = 0
    /// The largest sample, exact even beyond ``highestTrackable``; 0 when empty.
    public private(set) var max: Int64 = 0
    /// The sum of the samples, saturating at `Int64.max` (about 70 days of full load).
    private var sum: Int64 = 0

    public init() {}

    /// Adds one sample. A negative value (clocks that disagree) counts as 0.
    public mutating func record(_ nanoseconds: Int64) {
        let value = Swift.max(nanoseconds, 0)
        if counts.isEmpty {
            counts = Array(repeating: 0, count: Self.bucketCount)
            (min, max) = (value, value)
        } else {
            min = Swift.min(min, value)
            max = Swift.max(max, value)
        }
        counts[Self.bucketIndex(of: value)] += 1
        count += 1
        sum = Self.saturatingSum(sum, value)
    }

    /// The arithmetic mean of the samples in nanoseconds; 0 when empty.
    public var mean: Double {
        count == 0 ? 0 : Double(sum) / Double(count)
    }

    /// The value at or below which `p` percent (0...100) of the samples fall, within the
    /// histogram's error; exact for 0 (the min) and 100 (the max). 0 when empty.
    public func percentile(_ p: Double) -> Int64 {
        precondition(!p.isNaN, "a percentile must be a number")
        guard count > 0 else { return 0 }
        if p >= 100 { return max }
        if p <= 0 { return min }
        let rank = Swift.min(count, Swift.max(1, Int((p / 100 * Double(count)).rounded(.up))))
        var seen = 0
        for (index, n) in counts.enumerated() where n > 0 {
            seen += n
            if seen >= rank { return Swift.min(Swift.max(Self.middle(ofBucket: index), min), max) }
        }
        return max
    }

    /// Adds every sample of `other`, as if they had been recorded here.
    public mutating func merge(_ other: LatencyHistogram) {
        guard other.count > 0 else { return }
        guard count > 0 else {
            self = other
            return
        }
        for index in counts.indices { counts[index] += other.counts[index] }
        count += other.count
        min = Swift.min(min, other.min)
        max = Swift.max(max, other.max)
        sum = Self.saturatingSum(sum, other.sum)
    }

    /// p50, p90, p99, p99.9 and max in milliseconds, as reports show them.
    public var summary: LatencySummary {
        func milliseconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds) / 1e6 }
        return LatencySummary(count: count, p50: milliseconds(percentile(50)), p90: milliseconds(percentile(90)),
                              p99: milliseconds(percentile(99)), p999: milliseconds(percentile(99.9)), max: milliseconds(max))
    }

    // MARK: - Bucket layout

    /// The bucket of a non-negative value; values beyond ``highestTrackable`` go to the top one.
    @inline(__always)
    static func bucketIndex(of value: Int64) -> Int {
        let value = Swift.min(value, highestTrackable)
        guard value >= exactLimit else { return Int(value) }
        let exponent = Int64.bitWidth - 1 - value.leadingZeroBitCount
        let shift = exponent - subBucketBits
        return (shift + 1) * subBucketCount + Int(value >> shift) - subBucketCount
    }

    /// The smallest value of a bucket and its width.
    static func range(ofBucket index: Int) -> (lowest: Int64, width: Int64) {
        guard index >= Int(exactLimit) else { return (Int64(index), 1) }
        let shift = index / subBucketCount - 1
        let lowest = Int64(index % subBucketCount + subBucketCount) << shift
        return (lowest, 1 << shift)
    }

    private static func middle(ofBucket index: Int) -> Int64 {
        let (lowest, width) = range(ofBucket: index)
        return lowest + width / 2
    }

    private static func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : total
    }
}

extension LatencyHistogram: Codable {
    private enum CodingKeys: String, CodingKey {
        case count, min, max, sum
        /// Non-empty buckets as a flat list of pairs: index, count, index, count...
        case buckets
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let pairs = try container.decode([Int].self, forKey: .buckets)
        guard pairs.count.isMultiple(of: 2) else {
            throw DecodingError.dataCorruptedError(forKey: .buckets, in: container, debugDescription: "buckets must be index, count pairs")
        }
        var total = 0
        if !pairs.isEmpty { counts = Array(repeating: 0, count: Self.bucketCount) }
        for pair in stride(from: 0, to: pairs.count, by: 2) {
            let (index, n) = (pairs[pair], pairs[pair + 1])
            guard counts.indices.contains(index), n > 0 else {
                throw DecodingError.dataCorruptedError(forKey: .buckets, in: container,
                                                       debugDescription: "bucket \(index) with count \(n) is outside the layout")
            }
            counts[index] += n
            total += n
        }
        count = try container.decode(Int.self, forKey: .count)
        guard count == total else {
            throw DecodingError.dataCorruptedError(forKey: .count, in: container, debugDescription: "count \(count) but the buckets hold \(total)")
        }
        min = try container.decode(Int64.self, forKey: .min)
        max = try container.decode(Int64.self, forKey: .max)
        sum = try container.decode(Int64.self, forKey: .sum)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(count, forKey: .count)
        try container.encode(min, forKey: .min)
        try container.encode(max, forKey: .max)
        try container.encode(sum, forKey: .sum)
        var pairs: [Int] = []
        for (index, n) in counts.enumerated() where n > 0 { pairs += [index, n] }
        try container.encode(pairs, forKey: .buckets)
    }
}
