import LoadKit
import Measurements

/// The phases of a scenario on one time axis, for its chart: pushes arriving at the mock per
/// second (device and broadcast), the broadcasts' ingest→APNs p50 and p99 per second, and each
/// process's CPU share, from the first phase's start to the last one's end.
struct ScenarioTimeline {
    private var phases: [(label: String, figures: PhaseFigures)] = []

    mutating func add(_ figures: PhaseFigures, label: String) {
        phases.append((label, figures))
    }

    /// From the first phase's start to the last phase's end.
    var seconds: Double {
        guard let last = phases.last else { return 0 }
        return offset(of: last.figures) + last.figures.seconds
    }

    /// The chart's series; a series no phase has is left out.
    var series: [ScenarioResult.Series] {
        var series: [ScenarioResult.Series] = []
        for (endpoint, name) in [("device", "device pushes arrived"), ("broadcast", "broadcasts arrived")] {
            let parts = phases.map { (offset(of: $0.figures), $0.figures.arrivalRate(endpoint, name: name).timeSeries) }
            let joined = TimeSeries.joined(parts)
            if joined.values.contains(where: { $0 > 0 }) {
                series.append(.init(name: name, unit: "pushes/s", kind: .throughput, timeSeries: joined))
            }
        }
        for percentile in [50.0, 99.0] {
            let parts = phases.compactMap { phase in
                phase.figures.latencyTimeline("broadcast").map { (offset(of: phase.figures), $0.percentile(percentile)) }
            }
            if !parts.isEmpty {
                series.append(.init(name: "broadcast ingest→APNs p\(Int(percentile))", unit: "ms", kind: .latency,
                                    timeSeries: TimeSeries.joined(parts)))
            }
        }
        let names = phases.first?.figures.processes.map(\.name) ?? []
        for name in names {
            let parts = phases.compactMap { phase in
                phase.figures.processes.first { $0.name == name }.map { (offset(of: phase.figures), $0.usage.cpuShare) }
            }
            series.append(.init(name: "\(name) CPU", unit: "CPUs", kind: .resource,
                                timeSeries: TimeSeries.joined(parts, intervalSeconds: parts.first?.1.intervalSeconds ?? 1)))
        }
        return series
    }

    /// Where each phase starts, in seconds from the first one: a table for the report.
    var phaseTable: ScenarioResult.Table {
        ScenarioResult.Table(title: "Phases (chart time axis)", columns: ["phase", "from s", "to s"], rows: phases.map { label, figures in
            [label, String(format: "%.1f", offset(of: figures)), String(format: "%.1f", offset(of: figures) + figures.seconds)]
        })
    }

    private func offset(of figures: PhaseFigures) -> Double {
        guard let first = phases.first else { return 0 }
        return Double(figures.startedAtUnixNanoseconds - first.figures.startedAtUnixNanoseconds) / 1e9
    }
}
