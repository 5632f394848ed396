import Foundation
import Measurements
import Synchronization

/// What one process used while a ``ProcessMonitor`` watched it.
public struct ProcessUsage: Sendable, Codable, Equatable {
    public var pid: Int32
    /// User plus system CPU seconds between start and stop.
    public var cpuSeconds: Double
    /// CPU time per interval as a fraction of one CPU (2.0 = two CPUs busy).
    public var cpuShare: TimeSeries
    /// Resident set (VmRSS) at the end of each interval, in MB (10^6 bytes).
    public var residentMegabytes: TimeSeries
    /// The process's peak resident set (VmHWM) as last read, in bytes: the peak since it started.
    public var peakResidentBytes: Int
}

/// Samples processes from /proc on a background thread while a benchmark phase runs: CPU
/// seconds, resident set and its peak, every `interval`.
///
/// Thread-safe: ``start()``, ``stop()`` and ``usage()`` may be called from any thread; the
/// sampling thread is woken and joined by ``stop()``, so none outlives it (call it: the thread
/// keeps the monitor alive until then). A process that exits keeps the figures of its last sample.
public final class ProcessMonitor: Sendable {
    private struct Watched {
        var pid: Int32
        var startCPU: Double
        var lastCPU: Double
        var cpuShare: [Double] = []
        var residentMegabytes: [Double] = []
        var peakResidentBytes = 0
    }

    private struct State {
        var running = false
        var watched: [Watched] = []
        var lastSample = ContinuousClock.now
    }

    private let pids: [Int32]
    private let intervalMilliseconds: Int
    private let state = Mutex(State())
    /// Signalled by ``stop()`` to end the sampler's wait at once.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled by the sampler when it has left its loop.
    private let finished = DispatchSemaphore(value: 0)

    /// Watches `pids` (use `getpid()` for this process), sampling every `intervalMilliseconds`.
    public init(pids: [Int32], intervalMilliseconds: Int = 500) {
        precondition(intervalMilliseconds > 0, "the sampling interval must be positive")
        self.pids = pids
        self.intervalMilliseconds = intervalMilliseconds
    }

    /// Takes the first sample and starts the sampling thread; a second call does nothing.
    public func start() {
        let started = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.watched = pids.map { pid in
                let cpu = processCPUSeconds(pid: pid)
                return Watched(pid: pid, startCPU: cpu, lastCPU: cpu, peakResidentBytes: processPeakResidentBytes(pid: pid))
            }
            state.lastSample = .now
            return true
        }
        guard started else { return }
        let thread = Thread { [self] in
            while wake.wait(timeout: .now() + .milliseconds(intervalMilliseconds)) == .timedOut {
                sample()
            }
            finished.signal()
        }
        thread.name = "process-monitor"
        thread.start()
    }

    /// Stops sampling (after one last sample, so the CPU seconds cover exactly start to stop)
    /// and returns the usage of each process, in the order of `pids`. Without a running
    /// sampler, returns the figures as they stand.
    @discardableResult
    public func stop() -> [ProcessUsage] {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.running = false }
            return state.running
        }
        if wasRunning {
            wake.signal()
            finished.wait()
            sample()
        }
        return usage()
    }

    /// The usage so far, in the order of `pids` (empty before ``start()``).
    public func usage() -> [ProcessUsage] {
        state.withLock { state in
            state.watched.map { watched in
                let seconds = Double(intervalMilliseconds) / 1000
                return ProcessUsage(pid: watched.pid, cpuSeconds: watched.lastCPU - watched.startCPU,
                                    cpuShare: TimeSeries(intervalSeconds: seconds, values: watched.cpuShare),
                                    residentMegabytes: TimeSeries(intervalSeconds: seconds, values: watched.residentMegabytes),
                                    peakResidentBytes: watched.peakResidentBytes)
            }
        }
    }

    /// Reads /proc for every process and appends one interval to its series.
    private func sample() {
        let readings = pids.map { pid in (pid, ProcReading(pid: pid)) }
        let now = ContinuousClock.now
        state.withLock { state in
            let elapsed = (now - state.lastSample) / .seconds(1)
            state.lastSample = now
            for index in state.watched.indices {
                guard let reading = readings[index].1 else { continue }
                var watched = state.watched[index]
                watched.cpuShare.append(elapsed > 0 ? (reading.cpuSeconds - watched.lastCPU) / elapsed : 0)
                watched.residentMegabytes.append(Double(reading.residentBytes) / 1e6)
                watched.lastCPU = reading.cpuSeconds
                watched.peakResidentBytes = Swift.max(watched.peakResidentBytes, reading.peakResidentBytes)
                state.watched[index] = watched
            }
        }
    }
}

/// One read of a process's CPU time and memory; nil when the process is gone.
private struct ProcReading {
    var cpuSeconds: Double
    var residentBytes: Int
    var peakResidentBytes: Int

    init?(pid: Int32) {
        guard let cpu = readCPUSeconds(pid: pid), let memory = readMemory(pid: pid) else { return nil }
        (cpuSeconds, residentBytes, peakResidentBytes) = (cpu, memory.resident, memory.peak)
    }
}

/// CPU seconds (user + system) a process has used so far, from /proc/PID/stat; 0 if it cannot be read.
public func processCPUSeconds(pid: Int32) -> Double {
    readCPUSeconds(pid: pid) ?? 0
}

/// The peak resident set (VmHWM) of a process in bytes, from /proc/PID/status; 0 if it cannot be read.
public func processPeakResidentBytes(pid: Int32) -> Int {
    readMemory(pid: pid)?.peak ?? 0
}

/// The resident set (VmRSS) of a process in bytes, from /proc/PID/status; 0 if it cannot be read.
public func processResidentBytes(pid: Int32) -> Int {
    readMemory(pid: pid)?.resident ?? 0
}

/// Clock ticks per second, the unit of /proc/PID/stat's CPU times.
private let clockTicksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

private func readCPUSeconds(pid: Int32) -> Double? {
    // The command name (field 2) is in parentheses and may hold spaces: split after its ")".
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // After the name, field 3 (state) is index 0, so utime (14) is index 11 and stime (15) index 12.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / clockTicksPerSecond
}

/// VmRSS and VmHWM in bytes (/proc/PID/status gives them in kB).
private func readMemory(pid: Int32) -> (resident: Int, peak: Int)? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    func kilobytes(_ name: String) -> Int? {
        status.split(separator: "\n").first { $0.hasPrefix(name) }?
            .split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }
    guard let resident = kilobytes("VmRSS:"), let peak = kilobytes("VmHWM:") else { return nil }
    return (resident * 1024, peak * 1024)
}
