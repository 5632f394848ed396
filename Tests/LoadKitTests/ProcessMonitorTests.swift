import Foundation
import LoadKit
import Testing

@Suite struct ProcessMonitorTests {
    /// Spins until this process has used `seconds` more CPU time.
    static func burnCPU(seconds: Double) {
        let target = processCPUSeconds(pid: getpid()) + seconds
        var x: UInt64 = 1
        while processCPUSeconds(pid: getpid()) < target {
            for _ in 0..<100_000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
        }
        #expect(x != 0)
    }

    @Test func theMonitorSeesThisProcessWorkAndUseMemory() throws {
        let monitor = ProcessMonitor(pids: [getpid()], intervalMilliseconds: 20)
        monitor.start()
        Self.burnCPU(seconds: 0.3)
        let usage = try #require(monitor.stop().first)
        #expect(usage.pid == getpid())
        #expect(usage.cpuSeconds >= 0.29)
        #expect(usage.cpuShare.intervalSeconds == 0.02)
        #expect(!usage.cpuShare.values.isEmpty)
        #expect(usage.cpuShare.values.contains { $0 > 0 })
        #expect(usage.residentMegabytes.values.count == usage.cpuShare.values.count)
        let resident = try #require(usage.residentMegabytes.values.max())
        #expect(resident > 0)
        #expect(usage.peakResidentBytes > 0)
        #expect(monitor.stop() == [usage], "stopping twice changes nothing")
    }

    @Test func stopTakesAFinalSampleEvenBeforeTheFirstInterval() throws {
        let monitor = ProcessMonitor(pids: [getpid()], intervalMilliseconds: 60_000)
        monitor.start()
        Self.burnCPU(seconds: 0.05)
        let usage = try #require(monitor.stop().first)
        #expect(usage.cpuSeconds >= 0.04)
        #expect(usage.cpuShare.values.count == 1)
    }

    @Test func aMissingProcessReadsAsZero() {
        // Pid numbers stop well below Int32.max on Linux (pid_max is at most 2^22).
        let missing = Int32.max
        #expect(processCPUSeconds(pid: missing) == 0)
        #expect(processPeakResidentBytes(pid: missing) == 0)
        #expect(processResidentBytes(pid: missing) == 0)
        let monitor = ProcessMonitor(pids: [missing], intervalMilliseconds: 10)
        monitor.start()
        let usage = monitor.stop()
        #expect(usage.map(\.cpuSeconds) == [0])
        #expect(usage.first?.cpuShare.values.isEmpty == true)
    }

    @Test func theFreeFunctionsReadThisProcess() {
        #expect(processCPUSeconds(pid: getpid()) > 0)
        #expect(processResidentBytes(pid: getpid()) > 0)
        #expect(processPeakResidentBytes(pid: getpid()) > 0)
    }

    /// The peak is at least the resident set, read from a process whose memory stands still: in
    /// a process that frees memory between the two reads (this one, running other suites) the
    /// kernel's peak may read below an earlier resident set, as it counts pages per CPU and
    /// raises the peak only when memory is unmapped.
    @Test func thePeakOfAQuietProcessIsAtLeastItsResidentSet() throws {
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        defer { kill(sleeper.processIdentifier, SIGKILL); sleeper.waitUntilExit() }
        let pid = sleeper.processIdentifier
        var resident = processResidentBytes(pid: pid)
        for _ in 0..<100 {
            Thread.sleep(forTimeInterval: 0.02)
            let again = processResidentBytes(pid: pid)
            if again == resident, resident > 0 { break }
            resident = again
        }
        #expect(resident > 0)
        #expect(processPeakResidentBytes(pid: pid) >= resident)
    }
}
