import LoadKit
import Measurements
import Testing

@Suite struct TimeSeriesJoiningTests {
    @Test func phasesLandAtTheirOffsetsWithGapsAtZero() {
        let joined = TimeSeries.joined([(0, TimeSeries(intervalSeconds: 1, values: [1, 2])),
                                        (4.2, TimeSeries(intervalSeconds: 1, values: [5, 6]))])
        #expect(joined.values == [1, 2, 0, 0, 5, 6])
    }

    @Test func overlappingIntervalsAddUp() {
        let joined = TimeSeries.joined([(0, TimeSeries(intervalSeconds: 1, values: [1, 2, 3])),
                                        (1, TimeSeries(intervalSeconds: 1, values: [10]))])
        #expect(joined.values == [1, 12, 3])
    }

    @Test func nothingJoinsToAnEmptySeries() {
        #expect(TimeSeries.joined([]).values.isEmpty)
    }
}
