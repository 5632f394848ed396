import Measurements

extension SVGChart {
    /// A scenario's figures over time: throughput series (per second) in an upper panel and
    /// latency series (milliseconds) in a lower one, sharing a time axis in seconds. Resource
    /// series stay in the result file.
    public func render(_ scenario: ScenarioResult) -> String {
        func panel(_ title: String, _ kind: ScenarioResult.Series.Kind) -> Panel {
            Panel(title: title, series: scenario.series.filter { $0.kind == kind }.map { Series(name: $0.name, unit: $0.unit, timeSeries: $0.timeSeries) })
        }
        return render(title: scenario.name, description: scenario.name + ": throughput and latency over time",
                      panels: [panel("Throughput (per second)", .throughput), panel("Latency (ms)", .latency)],
                      empty: "No throughput or latency series were recorded.")
    }
}
