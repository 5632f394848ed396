import Measurements

extension TimeSeries {
    /// Series of phases measured one after another, on one time axis: each part's values are
    /// placed from its offset (seconds from the start of the first phase, rounded to whole
    /// intervals); gaps between phases are 0 and overlapping intervals add up. All parts must
    /// share `intervalSeconds`.
    public static func joined(_ parts: [(offsetSeconds: Double, series: TimeSeries)], intervalSeconds: Double = 1) -> TimeSeries {
        var values: [Double] = []
        for (offset, series) in parts {
            precondition(series.intervalSeconds == intervalSeconds, "joined series must share their interval")
            let first = max(0, Int((offset / intervalSeconds).rounded()))
            if values.count < first + series.values.count { values += repeatElement(0, count: first + series.values.count - values.count) }
            for (index, value) in series.values.enumerated() { values[first + index] += value }
        }
        return TimeSeries(intervalSeconds: intervalSeconds, values: values)
    }
}
