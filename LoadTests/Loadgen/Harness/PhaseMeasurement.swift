import Foundation
import LoadKit
import Measurements

/// Measures one phase of a scenario: CPU and memory of every process of the stage, sampled
/// from /proc, and what the mock saw arrive (its arrival report starts a new period when the
/// phase starts and is taken when it ends).
final class PhaseMeasurement {
    private let stage: LoadStage
    private let names: [Int32: String]
    private let monitor: ProcessMonitor
    private let started: Int64
    /// Unix nanoseconds at the start, to line phases up on one time axis.
    let startedAtUnixNanoseconds: Int64

    init(stage: LoadStage) throws {
        self.stage = stage
        let processes = stage.monitoredProcesses
        names = Dictionary(uniqueKeysWithValues: processes.map { ($0.pid, $0.name) })
        _ = try stage.mock.takeArrivalReport()
        monitor = ProcessMonitor(pids: processes.map(\.pid), intervalMilliseconds: 500)
        started = monotonicNanoseconds()
        startedAtUnixNanoseconds = unixNanoseconds()
        monitor.start()
    }

    /// Ends the phase.
    func finish() throws -> PhaseFigures {
        let usage = monitor.stop()
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        let arrivals = try stage.mock.takeArrivalReport()
        return PhaseFigures(seconds: seconds, startedAtUnixNanoseconds: startedAtUnixNanoseconds,
                            processes: usage.map { (names[$0.pid] ?? "pid \($0.pid)", $0) }, arrivals: arrivals)
    }
}

/// What one phase measured.
struct PhaseFigures {
    var seconds: Double
    var startedAtUnixNanoseconds: Int64
    var processes: [(name: String, usage: ProcessUsage)]
    var arrivals: ArrivalReport

    /// CPU seconds of the process named `name` during the phase.
    func cpuSeconds(of name: String) -> Double {
        processes.first { $0.name == name }?.usage.cpuSeconds ?? 0
    }

    /// The peak resident set of the process named `name` since it started, as last read in the phase.
    func peakResidentBytes(of name: String) -> Int {
        processes.first { $0.name == name }?.usage.peakResidentBytes ?? 0
    }

    /// The report's process rows; `operations` (pushes, events) gives each a CPU cost per operation.
    func processRows(operations: Int? = nil) -> [ScenarioResult.ProcessUsage] {
        processes.map { name, usage in
            ScenarioResult.ProcessUsage(name: name, cpuSeconds: usage.cpuSeconds,
                                        cpuMicrosecondsPerOperation: operations.flatMap { $0 > 0 ? usage.cpuSeconds * 1e6 / Double($0) : nil },
                                        peakRSSBytes: usage.peakResidentBytes)
        }
    }

    /// Accepted pushes per second at `endpoint` (all priorities, or one).
    func arrivalRate(_ endpoint: String, priority: Int? = nil, name: String) -> ScenarioResult.Series {
        ScenarioResult.Series(name: name, unit: "pushes/s", kind: .throughput,
                              timeSeries: arrivals.arrivals(endpoint: endpoint, priority: priority).perSecond)
    }

    /// The latencies of `endpoint` (one priority or all), merged over the mock's streams.
    func latencyTimeline(_ endpoint: String, priority: Int? = nil) -> LatencyTimeline? {
        let streams = (arrivals.endpoint(endpoint)?.streams ?? []).filter { priority == nil || $0.priority == priority }
        guard var merged = streams.first?.latency else { return nil }
        for stream in streams.dropFirst() { merged.merge(stream.latency) }
        return merged
    }
}

/// CLOCK_REALTIME in nanoseconds: the clock the mock stamps arrivals with.
func unixNanoseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}
