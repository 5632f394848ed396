import Foundation
@testable import LoadKit
import Testing

@Suite struct BenchmarkReportTests {
    @Test func jsonRoundTripKeepsEveryField() throws {
        let report = ReportFixtures.report()
        let decoded = try BenchmarkReport.decode(fromJSON: try report.jsonData())
        #expect(decoded == report)
    }

    @Test func jsonWritesTheStartAsISO8601InUTCWithSortedKeys() throws {
        let text = String(decoding: try ReportFixtures.report().jsonData(), as: UTF8.self)
        #expect(text.contains(#""startedAt" : "2026-11-30T15:04:05Z""#))
        #expect(text.contains(#""unit" : "pushes/s""#))
        let machine = try #require(text.range(of: #""machine""#)), scenarios = try #require(text.range(of: #""scenarios""#))
        let started = try #require(text.range(of: #""startedAt""#)), tool = try #require(text.range(of: #""toolVersion""#))
        #expect(machine.lowerBound < scenarios.lowerBound && scenarios.lowerBound < started.lowerBound)
        #expect(started.lowerBound < tool.lowerBound)
    }

    @Test func theStartIsKeptToTheWholeSecondSoTheRoundTripIsExact() throws {
        let report = BenchmarkReport(
            startedAt: Date(timeIntervalSince1970: 1_796_051_045.789), machine: ReportFixtures.machine, toolVersion: "t", scenarios: [])
        #expect(report.startedAt == ReportFixtures.start)
        #expect(try BenchmarkReport.decode(fromJSON: try report.jsonData()) == report)
    }

    @Test func aNonFiniteFigureIsWrittenRatherThanFailingTheFile() throws {
        var scenario = ReportFixtures.ingestBurst
        scenario.throughputs[0].ceilingRatio = .infinity
        let data = try ReportFixtures.report([scenario]).jsonData()
        #expect(String(decoding: data, as: UTF8.self).contains(#""ceilingRatio" : "inf""#))
        #expect(try BenchmarkReport.decode(fromJSON: data).scenarios[0].throughputs[0].ceilingRatio == .infinity)
    }

    @Test func aStartThatIsNotADateIsADecodingError() throws {
        var text = String(decoding: try ReportFixtures.report([]).jsonData(), as: UTF8.self)
        text = text.replacingOccurrences(of: "2026-11-30T15:04:05Z", with: "yesterday")
        #expect(throws: DecodingError.self) { try BenchmarkReport.decode(fromJSON: Data(text.utf8)) }
    }

    @Test func theReportPassesOnlyWhenEveryCheckPasses() {
        #expect(ReportFixtures.report([ReportFixtures.matchday]).passed)
        #expect(!ReportFixtures.report().passed)
        #expect(ReportFixtures.report([]).passed)
        #expect(!ReportFixtures.ingestBurst.passed)
        #expect(ReportFixtures.report().allChecks.map(\.scenario) == ["matchday", "ingest-burst", "ingest-burst"])
    }

    @Test func checksCompareOnTheirSide() {
        typealias Check = ScenarioResult.Check
        #expect(Check(name: "ratio", measured: 0.8, target: 0.8, comparison: .atLeast).passed)
        #expect(!Check(name: "ratio", measured: 0.79, target: 0.8, comparison: .atLeast).passed)
        #expect(Check(name: "p99", measured: 20, target: 20, comparison: .atMost).passed)
        #expect(!Check(name: "p99", measured: 20.1, target: 20, comparison: .atMost).passed)
        #expect(!Check(name: "ratio", measured: .nan, target: 0.8, comparison: .atLeast).passed)
        #expect(!Check(name: "given", measured: 1, target: 0, comparison: .atLeast, passed: false).passed)
    }

    @Test func comparisonAndKindAreWrittenAsReadableWords() throws {
        let text = String(decoding: try ReportFixtures.report().jsonData(), as: UTF8.self)
        #expect(text.contains(#""comparison" : "at-least""#) && text.contains(#""comparison" : "at-most""#))
        #expect(text.contains(#""kind" : "throughput""#) && text.contains(#""kind" : "resource""#))
    }
}

@Suite struct MachineDescriptionReportTests {
    @Test func readsTheMachineFilesUnderARoot() throws {
        let root = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try write("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC   7B13 64-Core Processor\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n", to: "proc/cpuinfo", under: root)
        try write("MemTotal:        8144532 kB\nMemFree:          123456 kB\n", to: "proc/meminfo", under: root)
        try write("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n", to: "etc/os-release", under: root)

        let machine = MachineDescription.read(fileSystemRoot: root)
        #expect(machine.cpuModel == "AMD EPYC 7B13 64-Core Processor")
        #expect(machine.memoryTotalBytes == 8_144_532 * 1024)
        #expect(machine.operatingSystem == "Debian GNU/Linux 12 (bookworm)")
        #expect(machine.cpuCount >= 1)
        #expect(machine.kernel.hasPrefix("Linux "))
        #expect(machine.summary.contains("AMD EPYC 7B13 64-Core Processor, \(machine.cpuCount) CPU"))
        #expect(machine.summary.contains("7.8 GiB, Debian GNU/Linux 12 (bookworm), Linux "))
    }

    @Test func missingOrOddFilesGiveUnknownRatherThanACrash() throws {
        let root = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try write("processor\t: 0\nHardware\t: BCM2835\n", to: "proc/cpuinfo", under: root)
        try write("MemTotal: lots\n", to: "proc/meminfo", under: root)

        let machine = MachineDescription.read(fileSystemRoot: root)
        #expect(machine.cpuModel == "unknown")
        #expect(machine.memoryTotalBytes == nil)
        #expect(machine.operatingSystem == "unknown")
        #expect(!machine.summary.contains("GiB"))
    }

    /// A run begun while an earlier run's processes live on says so in its header: their CPU
    /// is in none of its figures.
    @Test func loadProcessesAlreadyRunningAreNamedInTheSummary() throws {
        let root = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try write("nats-server\n", to: "proc/1204/comm", under: root)
        try write("bash\n", to: "proc/77/comm", under: root)
        try write("touchline-mock-\n", to: "proc/3015/comm", under: root)
        try write("touchline\n", to: "proc/\(getpid())/comm", under: root)
        try write("not a process", to: "proc/meminfo", under: root)

        let machine = MachineDescription.read(fileSystemRoot: root)
        #expect(machine.otherLoadProcesses == ["nats-server (pid 1204)", "touchline-mock- (pid 3015)"])
        #expect(machine.summary.hasSuffix("; 2 other load processes were running when the run began "
                                          + "(nats-server (pid 1204), touchline-mock- (pid 3015)): their CPU is in no figure"))
        let empty = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let quiet = MachineDescription.read(fileSystemRoot: empty)
        #expect(quiet.otherLoadProcesses == [] && !quiet.summary.contains("load process"))
    }

    @Test func theCurrentMachineHasACPUCountAndAKernel() {
        let machine = MachineDescription.current()
        #expect(machine.cpuCount >= 1)
        #expect(!machine.kernel.isEmpty && machine.kernel != "unknown")
    }

    private func write(_ text: String, to path: String, under root: String) throws {
        let full = (root as NSString).appendingPathComponent(path)
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
    }
}
