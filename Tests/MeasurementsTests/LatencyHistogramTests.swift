import Foundation
@testable import Measurements
import Testing

@Suite struct LatencyHistogramTests {
    /// The nearest-rank percentile of sorted samples: what the histogram approximates.
    static func reference(_ sorted: [Int64], _ p: Double) -> Int64 {
        let rank = min(sorted.count, max(1, Int((p / 100 * Double(sorted.count)).rounded(.up))))
        return sorted[rank - 1]
    }

    static func expectClose(_ histogram: LatencyHistogram, to samples: [Int64], sourceLocation: SourceLocation = #_sourceLocation) {
        let sorted = samples.sorted()
        for p in [0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100] {
            let expected = reference(sorted, p)
            let measured = histogram.percentile(p)
            // Half a bucket: 1/256 of the value (exact below 256 ns).
            let bound = Double(expected) / 256
            #expect(abs(Double(measured - expected)) <= bound, "p\(p): \(measured) vs \(expected)", sourceLocation: sourceLocation)
        }
    }

    static func histogram(_ samples: [Int64]) -> LatencyHistogram {
        var histogram = LatencyHistogram()
        for sample in samples { histogram.record(sample) }
        return histogram
    }

    @Test func uniformSamplesMatchTheSortedReference() {
        var random = SystemRandomNumberGenerator()
        let samples = (0..<50_000).map { _ in Int64.random(in: 0...200_000_000, using: &random) }
        Self.expectClose(Self.histogram(samples), to: samples)
    }

    @Test func skewedSamplesMatchTheSortedReference() {
        // Mostly around 300 µs, a long tail to seconds: what a latency looks like.
        var random = SystemRandomNumberGenerator()
        let samples = (0..<50_000).map { _ -> Int64 in
            let tail = -log(Double.random(in: Double.ulpOfOne...1, using: &random))
            return Int64(250_000 * exp(tail * 1.5))
        }
        Self.expectClose(Self.histogram(samples), to: samples)
    }

    @Test func smallValuesAreExact() {
        let samples: [Int64] = [0, 1, 2, 3, 100, 255, 255]
        let histogram = Self.histogram(samples)
        #expect(histogram.percentile(50) == 3)
        #expect(histogram.percentile(80) == 255)
        #expect(histogram.percentile(0) == 0)
    }

    @Test func countMinMaxAndMeanAreExact() {
        let samples: [Int64] = [7_000_123, 1_234, 999_999_999, 42_424_242]
        let histogram = Self.histogram(samples)
        #expect(histogram.count == 4)
        #expect(histogram.min == 1_234)
        #expect(histogram.max == 999_999_999)
        #expect(histogram.percentile(100) == 999_999_999)
        #expect(histogram.mean == Double(samples.reduce(0, +)) / 4)
    }

    @Test func anEmptyHistogramReportsZeros() {
        let histogram = LatencyHistogram()
        #expect(histogram.count == 0)
        #expect(histogram.percentile(99) == 0)
        #expect(histogram.mean == 0)
        #expect(histogram.summary == LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0))
    }

    @Test func everyBucketCoversItsValues() {
        // The layout has no gaps or overlaps: consecutive buckets meet, widths stay within 1/128.
        for index in 1..<LatencyHistogram.bucketCount {
            let previous = LatencyHistogram.range(ofBucket: index - 1)
            let bucket = LatencyHistogram.range(ofBucket: index)
            #expect(previous.lowest + previous.width == bucket.lowest)
            #expect(LatencyHistogram.bucketIndex(of: bucket.lowest) == index)
            #expect(LatencyHistogram.bucketIndex(of: bucket.lowest + bucket.width - 1) == index)
            #expect(bucket.width == 1 || bucket.width * 128 <= bucket.lowest)
        }
    }

    @Test func valuesBeyondTheRangeClampIntoTheTopBucketButKeepTheirMax() {
        let hours: Int64 = 3 * 3_600_000_000_000
        var histogram = LatencyHistogram()
        histogram.record(1_000)
        histogram.record(hours)
        histogram.record(.max)
        #expect(histogram.count == 3)
        #expect(histogram.max == .max)
        #expect(histogram.percentile(100) == .max)
        #expect(histogram.percentile(60) >= LatencyHistogram.highestTrackable / 2)
        #expect(abs(histogram.percentile(10) - 1_000) <= 1_000 / 256)
        // One hour is still inside the range, at full resolution.
        var hour = LatencyHistogram()
        hour.record(3_600_000_000_000)
        hour.record(3_600_000_000_000)
        #expect(hour.percentile(50) == 3_600_000_000_000)
        #expect(LatencyHistogram.bucketIndex(of: 3_600_000_000_000) < LatencyHistogram.bucketCount - 1)
    }

    @Test func negativeValuesCountAsZero() {
        var histogram = LatencyHistogram()
        histogram.record(-5)
        #expect(histogram.count == 1 && histogram.min == 0 && histogram.max == 0)
    }

    @Test func mergingEqualsRecordingEverything() {
        var random = SystemRandomNumberGenerator()
        let samples = (0..<10_000).map { _ in Int64.random(in: 0...5_000_000_000, using: &random) }
        var merged = Self.histogram(Array(samples[..<3_000]))
        merged.merge(Self.histogram(Array(samples[3_000...])))
        merged.merge(LatencyHistogram())
        #expect(merged == Self.histogram(samples))
        var intoEmpty = LatencyHistogram()
        intoEmpty.merge(merged)
        #expect(intoEmpty == merged)
    }

    @Test func encodesOnlyNonEmptyBucketsAndRoundTrips() throws {
        let histogram = Self.histogram([5, 5, 1_000_000, 2_000_000_000])
        let data = try JSONEncoder().encode(histogram)
        let text = String(decoding: data, as: UTF8.self)
        #expect(!text.contains("\n") && text.count < 200, "\(text)")
        #expect(try JSONDecoder().decode(LatencyHistogram.self, from: data) == histogram)
        let empty = try JSONEncoder().encode(LatencyHistogram())
        #expect(try JSONDecoder().decode(LatencyHistogram.self, from: empty) == LatencyHistogram())
    }

    @Test func decodingRefusesBucketsThatDoNotAddUp() {
        for json in [#"{"count":2,"min":1,"max":1,"sum":2,"buckets":[1,1]}"#,
                     #"{"count":1,"min":1,"max":1,"sum":1,"buckets":[99999,1]}"#,
                     #"{"count":1,"min":1,"max":1,"sum":1,"buckets":[1]}"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(LatencyHistogram.self, from: Data(json.utf8)) }
        }
    }

    @Test func theSummaryIsInMilliseconds() {
        let histogram = Self.histogram((1...1000).map { Int64($0) * 1_000_000 })
        let summary = histogram.summary
        #expect(summary.count == 1000)
        #expect(abs(summary.p50 - 500) <= 500.0 / 256)
        #expect(abs(summary.p99 - 990) <= 990.0 / 256)
        #expect(abs(summary.p999 - 999) <= 999.0 / 256)
        #expect(summary.max == 1000)
    }
}
