import Foundation
import LoadKit
import Measurements

/// Reports built by hand for the report tests: one passing scenario with every kind of figure,
/// one failing scenario, and helpers for scenarios with chosen series.
enum ReportFixtures {
    static let machine = MachineDescription(
        cpuModel: "AMD EPYC 7B13", cpuCount: 2, memoryTotalBytes: 8_340_000_768,
        kernel: "Linux 6.1.0-28-amd64", operatingSystem: "Debian GNU/Linux 12 (bookworm)")

    /// 2026-11-30T15:04:05Z.
    static let start = Date(timeIntervalSince1970: 1_796_051_045)

    static let matchday = ScenarioResult(
        name: "matchday",
        description: "300 concurrent matches with clock ticks, stats, goals and a final whistle.",
        parameters: [.init(name: "matches", value: "300"), .init(name: "duration", value: "60 s")],
        durationSeconds: 60,
        throughputs: [
            .init(name: "events ingested", unit: "events/s", value: 12_345.6),
            .init(name: "pushes sent", unit: "pushes/s", value: 135_377, ceilingRatio: 0.9123),
        ],
        latencies: [
            .init(
                name: "ingest to APNs", summary: LatencySummary(count: 740_000, p50: 1.234, p90: 2.5, p99: 4.567, p999: 9.1, max: 31.25),
                note: "includes coalescing delay"),
        ],
        processes: [.init(name: "gateway", cpuSeconds: 42.5, cpuMicrosecondsPerOperation: 6.25, peakRSSBytes: 125_300_000)],
        tables: [.init(title: "APNs responses by status", columns: ["status", "count"], rows: [["200", "740,000"], ["429", "12"]])],
        series: [
            .init(name: "pushes sent", unit: "pushes/s", kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 1, values: [0, 120_000, 135_000, 131_000])),
            .init(name: "ingest to APNs p99", unit: "ms", kind: .latency, timeSeries: TimeSeries(intervalSeconds: 1, values: [0, 3.5, 4.2, 4.9])),
            .init(name: "gateway CPU", unit: "%", kind: .resource, timeSeries: TimeSeries(intervalSeconds: 1, values: [50, 90, 95, 93])),
        ],
        checks: [.init(name: "push ratio to ceiling", measured: 0.9123, target: 0.8, comparison: .atLeast)],
        notes: ["The machine was otherwise quiet."])

    static let ingestBurst = ScenarioResult(
        name: "ingest-burst",
        description: "Maximum durable ingest rate.",
        durationSeconds: 20,
        throughputs: [.init(name: "events committed", unit: "events/s", value: 48_000.4, ceilingRatio: 0.35)],
        checks: [
            .init(name: "ingest ratio to ceiling", measured: 0.35, target: 0.5, comparison: .atLeast),
            .init(name: "p99 commit latency", measured: 12.5, target: 20, comparison: .atMost, unit: "ms"),
        ])

    static func report(_ scenarios: [ScenarioResult] = [matchday, ingestBurst]) -> BenchmarkReport {
        BenchmarkReport(startedAt: start, machine: machine, toolVersion: "touchline-load 0.6.0", scenarios: scenarios)
    }

    static func scenario(name: String = "chart", series: [ScenarioResult.Series]) -> ScenarioResult {
        ScenarioResult(name: name, description: "Chart test.", durationSeconds: 10, series: series)
    }

    static func temporaryDirectory() throws -> String {
        let path = (NSTemporaryDirectory() as NSString).appendingPathComponent("report-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
