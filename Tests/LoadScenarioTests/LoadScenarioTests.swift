import ChildProcesses
import Foundation
import LoadKit
import NATSServers
import Testing
import TestSlots

/// `touchline-load` as users run it: real gateway and mock processes, a small run of each
/// scenario, and the results folder it leaves. Figures are not judged here (a debug build on a
/// shared machine); what is checked is that the run ends by itself and its report is whole.
/// The scenarios that run for tens of seconds are `long` (they go before the short heavy tests
/// waiting); the scale-out run starts a three-node NATS cluster and weighs as much.
@Suite struct LoadScenarioTests {
    static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("touchline-load").path

    /// Runs `touchline-load` with `arguments`; returns its exit status and output.
    func run(_ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
        let result = try await ChildProcess.runSeparately(Self.executable, arguments)
        return (result.termination.status, result.output, result.errors)
    }

    func report(under root: String) throws -> BenchmarkReport {
        try BenchmarkReport.decode(fromJSON: Data(contentsOf: URL(fileURLWithPath: root + "/latest/result.json")))
    }

    @Test(.heavy(long: true)) func aSmallMatchDayEndsEveryMatchAndWritesItsReport() async throws {
        let root = NSTemporaryDirectory() + "load-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try await run(["matchday", "--matches", "4", "--match-seconds", "10", "--half-time-seconds", "2", "--kickoff-spread", "2",
                              "--results", root])
        #expect(result.status == 0, "\(result.errors)")
        let report = try report(under: root)
        let scenario = try #require(report.scenarios.first)
        #expect(scenario.name == "matchday")
        // Both arms, the uniform baseline and the default policy, played the same schedule.
        for arm in ["uniform pacing (baseline)", "default policy"] {
            let ended = try #require(scenario.checks.first { $0.name == "matches ended at APNs with their final state, \(arm)" })
            #expect(ended.measured == 1)
            #expect(scenario.throughputs.contains { $0.name == "broadcasts arrived, \(arm)" && $0.value > 0 })
        }
        let coalescing = try #require(scenario.tables.first { $0.title.hasPrefix("Coalescing") })
        #expect(coalescing.rows.count == 2 && coalescing.rows[0][1] == coalescing.rows[1][1], "\(coalescing.rows)")
        #expect(scenario.checks.contains { $0.name == "pushes, baseline / default policy" && $0.measured > 0 })
        #expect(scenario.series.contains { $0.kind == .latency && !$0.timeSeries.values.isEmpty })
        for file in ["summary.md", "matchday.svg"] {
            #expect(FileManager.default.fileExists(atPath: root + "/latest/" + file))
        }
        #expect(result.output.contains("results: "))
    }

    @Test(.heavy(long: true)) func aSmallKickoffStormSendsEveryPushAndComparesWithH2load() async throws {
        let root = NSTemporaryDirectory() + "load-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try await run(["kickoff-storm", "--tokens", "5000", "--rounds", "1", "--matches", "20", "--results", root])
        #expect(result.status == 0, "\(result.errors)")
        let scenario = try #require(try report(under: root).scenarios.first)
        let fanOut = try #require(scenario.throughputs.first { $0.name == "kickoff fan-out, no broadcasts" })
        #expect(fanOut.value > 0 && (fanOut.ceilingRatio ?? 0) > 0)
        #expect(scenario.checks.map(\.name) == ["kickoff fan-out / h2load", "kickoff fan-out during the matches / h2load",
                                                "broadcast p99 during the storm / alone",
                                                "every event broadcast, storm outlasting the events"])
        #expect(scenario.latencies.allSatisfy { $0.summary.count > 0 })
    }

    @Test(.heavy(long: true)) func aSmallWebhookIsolationRunReachesBothBadReceivers() async throws {
        let root = NSTemporaryDirectory() + "load-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try await run(["webhook-isolation", "--rounds", "1", "--matches", "10", "--seconds", "2", "--results", root])
        #expect(result.status == 0, "\(result.errors)")
        let scenario = try #require(try report(under: root).scenarios.first)
        #expect(scenario.checks.map(\.name) == ["broadcast p99, receiver never answers / no webhooks", "broadcast p99, receiver answers 500 / no webhooks",
                                                "every event broadcast"])
        #expect(scenario.latencies.count == 3 && scenario.latencies.allSatisfy { $0.summary.count > 0 })
        // Deliveries were under way in both bad phases: each receiver took connections.
        let round = try #require(scenario.tables.first { $0.title.hasPrefix("Rounds") }?.rows.first)
        #expect(round.suffix(2).allSatisfy { (Int($0) ?? 0) > 0 }, "\(round)")
    }

    /// A small soak, about 35 s: one `kill -9` and restart, then two seconds of a full disk
    /// (the gateway's fault file, so the refusals start at once), two slow clients of each kind
    /// with short deadlines, four event channels, channel churn and jobs of 100 tokens. Seed 2
    /// puts the kill before the disk episode. Every check must pass but one, which an open
    /// gateway bug can fail when a channel create is at APNs as the disk fills: the failed save
    /// of its APNs id is answered 503, the provider's repeat makes a second APNs channel, and
    /// the first is never reconciled (the disk episode before a kill shows a second open bug, a
    /// channel's failed saves lost at the restart; the default run has that order).
    @Test(.heavy(long: true)) func aSmallSoakChecksEvery202AndLeavesAWholeReport() async throws {
        let root = NSTemporaryDirectory() + "load-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let started = ContinuousClock.now
        let result = try await run(["soak", "--seconds", "30", "--kills", "1", "--disk-seconds", "2", "--disk-fault", "fault-file", "--seed", "2",
                              "--channels", "4", "--tokens", "100", "--slow-clients", "2", "--http-deadlines", "2,3,4", "--results", root])
        #expect(result.status == 0, "\(result.errors)")
        #expect(ContinuousClock.now - started < .seconds(60))
        let scenario = try #require(try report(under: root).scenarios.first)
        #expect(scenario.name == "soak")
        let checkpoints = try #require(scenario.tables.first { $0.title == "Checks after each fault" })
        #expect(checkpoints.rows.map(\.first) == ["kill 1", "disk full", "end"])
        // The restart was timed, and every acknowledged event was found after it and at the end.
        #expect(checkpoints.rows[0][2] != "–")
        for row in checkpoints.rows {
            let verified = row[9].split(separator: "/").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(verified.count == 2 && verified[0] == verified[1] && verified[0] != "0", "\(row)")
        }
        let jobs = try #require(scenario.tables.first { $0.title == "Personal jobs" })
        #expect(jobs.rows.count >= 4 && jobs.rows.allSatisfy { $0.last == "exact" }, "\(jobs.rows)")
        #expect(scenario.tables.contains { $0.title == "Slow clients" && $0.rows.count == 3 })
        #expect(scenario.tables.contains { $0.title == "Disk full" && $0.rows.first?.first?.hasPrefix("fault file") == true })
        #expect(scenario.checks.count == 13)
        for check in scenario.checks {
            #expect(check.passed, "\(check.name) = \(check.measured)")
        }
        for file in ["summary.md", "soak.svg"] {
            #expect(FileManager.default.fileExists(atPath: root + "/latest/" + file))
        }
        #expect(result.output.contains("soak: kill 1 at") && result.output.contains("results: "))
    }

    /// Two gateways on a three-node NATS cluster, their ceiling, and a SQLite gateway, then the
    /// partitioned registry and the kickoff fan-out, in one run: every figure of issue 34 checked.
    @Test(.heavy(weight: 3, long: true), .enabled(if: (try? NATSServerExecutable.current.get()) != nil, "needs nats-server"))
    func aSmallScaleOutRunMeasuresTheClusterAgainstItsCeilingAndSQLite() async throws {
        let root = NSTemporaryDirectory() + "load-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try await run(["scale-out", "--channels", "16", "--partitions", "4", "--seconds", "2", "--kills", "1", "--pauses", "1",
                                    "--registry-tokens", "2000", "--kickoff-tokens", "3000", "--results", root])
        #expect(result.status == 0, "\(result.errors)")
        let report = try report(under: root)
        #expect(report.scenarios.map(\.name) == ["scale-out", "registry-scale-out", "kickoff-storm"])
        try checkRegistryAndKickoffParts(of: report)
        let scenario = try #require(report.scenarios.first)
        for name in ["durable ingest, 2 gateways on JetStream", "durable ingest, 2 gateways on JetStream, each batch to its owner",
                     "cluster ceiling (plain publisher, same messages)", "durable ingest, 1 gateway on SQLite"] {
            let figure = scenario.throughputs.first { $0.name == name }
            #expect((figure?.value ?? 0) > 0, "\(name): \(String(describing: figure))")
        }
        #expect(scenario.checks.first { $0.name == "every paced event broadcast" }?.measured == 1)
        // Per event against SQLite, to the owners and handed over; the ceiling is information only.
        #expect(scenario.checks.filter { $0.name.hasPrefix("gateway CPU per event, JetStream") && $0.measured > 0 }.count == 2, "\(scenario.checks)")
        #expect(!scenario.checks.contains { $0.name.contains("ceiling") })
        // The servers' CPU per event, through the gateways and for the plain publisher alike.
        let perEvent = try #require(scenario.tables.first { $0.title == "CPU per acknowledged event during the bursts" })
        #expect(perEvent.rows.map { $0[0] }.last == "ceiling publisher (no gateway)", "\(perEvent.rows)")
        for row in perEvent.rows where !row[0].hasPrefix("SQLite") { #expect((Double(row[2]) ?? 0) > 0, "\(row)") }
        // Both backends again at one rate, which the check compares.
        let atOneRate = perEvent.rows.filter { $0[0].hasSuffix("at the common rate") }
        #expect(atOneRate.count == 2 && atOneRate.allSatisfy { (Double($0[1]) ?? 0) > 0 }, "\(perEvent.rows)")
        #expect(scenario.checks.contains { $0.name == "ingest→APNs p99, cluster / one SQLite gateway" && $0.measured > 0 })
        #expect((scenario.latencies.first { $0.name == "ingest→APNs, paced events, one gateway on SQLite" }?.summary.count ?? 0) > 0)
        // Each paced phase's warm-up second is reported apart, on both backends; the measured
        // events alone were broadcast (the check above counts the mock's pushes against them).
        for backend in ["cluster", "SQLite"] {
            let warmUp = scenario.latencies.first { $0.name == "event sent → 202, warm-up second after the idle, \(backend)" }
            #expect((warmUp?.summary.count ?? 0) > 0, "\(backend): \(String(describing: warmUp))")
        }
        // One kill and one pause, each timed to the moved channels' first pushes; nothing acknowledged lost.
        let failover = scenario.latencies.first { $0.name == "failover: kill or pause → every moved channel's first push" }
        #expect(failover?.summary.count == 2 && (failover?.summary.p50 ?? 0) > 0, "\(String(describing: failover))")
        for fault in ["kill", "pause"] {
            #expect(scenario.latencies.first { $0.name == "failover: \(fault) → every moved channel's first push" }?.summary.count == 1)
        }
        #expect(scenario.checks.first { $0.name == "acknowledged events lost in the failovers" }?.measured == 0, "\(scenario.checks)")
        #expect(scenario.checks.contains { $0.name == "failover p99, kills and pauses (ms)" && $0.measured > 0 })
        #expect(scenario.processes.contains { $0.name == "NATS n1" } && scenario.processes.contains { $0.name == "gateway 2" })
    }

    /// The scale-out run's registry part (item 2's four figures, each measured) and its kickoff
    /// part (item 1's rates against h2load).
    private func checkRegistryAndKickoffParts(of report: BenchmarkReport) throws {
        let registry = try #require(report.scenarios.first { $0.name == "registry-scale-out" })
        #expect(registry.checks.map(\.name) == ["registrations two gateways take in one's time, by CPU",
                                                "a replaced gateway serving its share of the registry (s)",
                                                "peak memory per gateway of two / the whole copy's", "data per gateway of two / the whole copy's"])
        for check in registry.checks { #expect(check.measured > 0, "\(check.name) = \(check.measured)") }
        let kickoff = try #require(report.scenarios.first { $0.name == "kickoff-storm" })
        for name in ["kickoff fan-out / h2load", "kickoff fan-out during the matches / h2load"] {
            #expect((kickoff.checks.first { $0.name == name }?.measured ?? 0) > 0, "\(name): \(kickoff.checks)")
        }
    }

    /// A small export-memory run: both phases measured, every export whole (the memory budget
    /// itself is judged on a release build, `touchline-load export-memory`).
    @Test(.heavy) func aSmallExportMemoryRunExportsWholeAndMeasuresBothPhases() async throws {
        let root = NSTemporaryDirectory() + "load-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try await run(["export-memory", "--events", "3000", "--concurrent", "2", "--results", root])
        #expect(result.status == 0, "\(result.errors)")
        let scenario = try #require(try report(under: root).scenarios.first)
        #expect(scenario.checks.map(\.name) == ["RSS above idle during 1 export(s) at once (MiB)", "RSS above idle during 2 export(s) at once (MiB)",
                                                "every export whole and identical"])
        #expect(scenario.checks.last?.measured == 1, "every export a 200 with its last chunk, the same bytes")
        #expect(scenario.tables.first?.rows.count == 2)
    }

    @Test(.heavy) func badOptionsGetAOneLineMessageAndStatus64() async throws {
        for (arguments, message) in [(["matchday", "--matches", "0"], "--matches takes a positive whole number, got 0"),
                                     (["penalty-shootout"], "unknown scenario 'penalty-shootout'"),
                                     (["ingest-burst", "--tokens", "5"], "touchline-load ingest-burst: unknown option --tokens"),
                                     (["matchday", "--matchs", "5"], "unknown option --matchs (did you mean --matches?)"),
                                     (["soak", "--http-deadlines", "5,10"], "--http-deadlines takes three positive numbers of seconds"),
                                     (["matchday", "--gateway-config", "/nonexistent/touchline.json"], "cannot read /nonexistent/touchline.json")] {
            let result = try await run(arguments)
            #expect(result.status == 64)
            #expect(result.errors.contains(message), "\(arguments): \(result.errors)")
            #expect(result.errors.split(separator: "\n").count == 1)
        }
    }
}
