import Foundation
import Measurements
import Testing

@Suite struct LatencyTimelineTests {
    static let start: Int64 = 1_780_000_000_000_000_000
    static let second: Int64 = 1_000_000_000
    static let period = MeasurementPeriod(startNanoseconds: start)

    @Test func samplesLandInTheIntervalOfTheirTime() {
        var timeline = LatencyTimeline(period: Self.period)
        timeline.record(1_000_000, at: Self.start + 100)
        timeline.record(3_000_000, at: Self.start + Self.second - 1)
        timeline.record(9_000_000, at: Self.start + 2 * Self.second)
        timeline.record(7_000_000, at: Self.start - 5)
        #expect(timeline.intervals.map(\.count) == [3, 0, 1])
        #expect(timeline.count == 4)
        #expect(timeline.histogram.max == 9_000_000)
        #expect(timeline.histogram.min == 1_000_000)
        let p100 = timeline.percentile(100)
        #expect(p100.intervalSeconds == 1)
        #expect(p100.values == [7, 0, 9])
    }

    @Test func theIntervalIsConfigurable() {
        var timeline = LatencyTimeline(period: MeasurementPeriod(startNanoseconds: 0, intervalNanoseconds: 250_000_000))
        timeline.record(1, at: 600_000_000)
        #expect(timeline.intervals.map(\.count) == [0, 0, 1])
        #expect(timeline.percentile(50).intervalSeconds == 0.25)
    }

    @Test func timelinesMergeIntervalByInterval() throws {
        var a = LatencyTimeline(period: Self.period)
        var b = LatencyTimeline(period: Self.period)
        var all = LatencyTimeline(period: Self.period)
        for (i, latency) in [5, 10, 15, 20, 25, 30].enumerated() {
            let time = Self.start + Int64(i) * Self.second / 2
            if i.isMultiple(of: 2) { a.record(Int64(latency), at: time) } else { b.record(Int64(latency), at: time) }
            all.record(Int64(latency), at: time)
        }
        a.merge(b)
        #expect(a == all)
        let data = try JSONEncoder().encode(a)
        #expect(try JSONDecoder().decode(LatencyTimeline.self, from: data) == a)
    }

    @Test func rateCountersGiveEventsPerSecond() throws {
        var worker1 = RateCounter(period: MeasurementPeriod(startNanoseconds: Self.start, intervalNanoseconds: Self.second / 2))
        var worker2 = RateCounter(period: worker1.period)
        for i in 0..<10 { worker1.record(at: Self.start + Int64(i) * Self.second / 10) }
        worker2.record(at: Self.start + 2 * Self.second, events: 3)
        worker1.merge(worker2)
        #expect(worker1.counts == [5, 5, 0, 0, 3])
        #expect(worker1.total == 13)
        #expect(worker1.perSecond == TimeSeries(intervalSeconds: 0.5, values: [10, 10, 0, 0, 6]))
        #expect(try JSONDecoder().decode(RateCounter.self, from: JSONEncoder().encode(worker1)) == worker1)
    }
}

@Suite struct MeasurementPeriodTests {
    @Test func intervalsCountFromTheStart() {
        let period = MeasurementPeriod(startNanoseconds: 1_000, intervalNanoseconds: 100)
        #expect(period.interval(at: 1_000) == 0)
        #expect(period.interval(at: 1_099) == 0)
        #expect(period.interval(at: 1_100) == 1)
        #expect(period.interval(at: 0) == 0, "a sample stamped before the start counts in the first interval")
        #expect(period.intervalSeconds == 1e-7)
    }

    @Test func decodingRefusesAnIntervalThatIsNotPositive() throws {
        let json = #"{"startNanoseconds":5,"intervalNanoseconds":0}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MeasurementPeriod.self, from: Data(json.utf8)) }
        let period = MeasurementPeriod(startNanoseconds: 5, intervalNanoseconds: 7)
        #expect(try JSONDecoder().decode(MeasurementPeriod.self, from: JSONEncoder().encode(period)) == period)
    }
}
