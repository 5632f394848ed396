import Foundation
import LoadKit
import Measurements
import NATSServers
import Synchronization
import TouchlineCore

/// `registry-scale-out`: the partitioned token registry in gateway processes (`store.registry:
/// "partitioned"`) on a three-node cluster, all on loopback (issue 34, item 2):
///
/// 0. The reference: `tokens` registrations through one gateway holding the whole registry
///    (`store.registry: "shared"`, the layout before partitions): its peak resident memory and
///    its data directory's bytes, the "whole copy" every gateway held.
/// 1. On a fresh cluster, `tokens` registrations through one gateway, which owns every
///    partition: its CPU per registration.
/// 2. On a fresh cluster (a registry's cost per token grows with the tokens it holds, so both
///    start empty), two gateways, each with half the partitions, and the same `tokens`
///    registrations, half the requests through each (a balancer's share: each list is cut by
///    partition and the parts of the other's partitions handed to it). The two gateways' CPU
///    per registration together, against the one's: on two CPUs of their own, the
///    registrations two gateways take in the time one takes its (the fair figure on a host of
///    two CPUs shared with the servers and the load generator). Each gateway's peak resident
///    memory and data directory's bytes, against the whole copy's; what the tokens cost the
///    servers (their data directories together, right after).
/// 3. The second gateway is killed (SIGKILL), the first takes its partitions over, and a new
///    gateway with an empty data directory replaces it: the time from its start until it
///    serves its share of the registry partitions (read from their snapshots and logs), and
///    then answers a token route for each of them.
struct RegistryScaleOut {
    struct Options {
        var tokens = 200_000
        var partitions = 16
        var batchSize = 500
        /// Registrations two gateways take in the time one takes its own, on CPUs of their own.
        var throughputTarget = 1.6
        /// From a replaced gateway's start to its share of the registry served (seconds).
        var replacedTargetSeconds = 60.0
        /// Memory and disk of each of two gateways against one gateway's whole copy.
        var perGatewayShareTarget = 0.6
        /// Phases 0 and 1 (the whole copy, one gateway): off, a run measures only the two gateways
        /// and the replacement (`--skip-references`), a third of a 10-million run's time.
        var measuresReferences = true
    }

    static let name = "registry-scale-out"
    let options: Options
    let settings: LoadSettings

    func run() async throws -> ScenarioResult {
        let log = ScenarioLog(Self.name)
        let started = monotonicNanoseconds()
        let stage = try LoadStage(settings: settings, pinMock: false)
        let tokens = TokenRegistration.deviceTokens(options.tokens)
        let registration = TokenRegistration(batchSize: options.batchSize)
        let references = options.measuresReferences ? try await measureReferences(tokens, registration: registration, stage: stage, log: log) : nil
        let retriedBefore = registration.retried.load(ordering: .relaxed)

        // On a fresh cluster, through two gateways.
        let cluster = try await startCluster(on: stage)
        let first = try stage.startGateway(extraArguments: ["--store", storeSettings(cluster, instance: "g1")], emptyData: true)
        let second = try stage.startAnotherGateway(extraArguments: ["--store", storeSettings(cluster, instance: "g2")])
        try waitUntil("both gateways serve their share of the registry") {
            let counts = [try first.servedPartitions(.registry).count, try second.servedPartitions(.registry).count]
            return counts.reduce(0, +) == options.partitions && counts.allSatisfy { $0 >= options.partitions / 2 - 1 }
        }
        let phase = try PhaseMeasurement(stage: stage)
        let bothSeconds = try registration.register(tokens, follow: "team:ARS", users: "u", retries: 50,
                                                    connect: { [first] index in try (index.isMultiple(of: 2) ? first : second).connect() })
        let both = try phase.finish()
        let bothCPU = (both.cpuSeconds(of: "gateway") + both.cpuSeconds(of: "gateway 2")) * 1e6 / Double(options.tokens)
        let factor = references.map { 2 * $0.aloneCPU / bothCPU }
        let bothRetries = registration.retried.load(ordering: .relaxed) - retriedBefore
        let halves = [Footprint(peakMemory: both.peakResidentBytes(of: "gateway"), disk: directoryBytes(stage.dataDirectory(ofGateway: 0))),
                      Footprint(peakMemory: both.peakResidentBytes(of: "gateway 2"), disk: directoryBytes(stage.dataDirectory(ofGateway: 1)))]
        // What the tokens cost the servers: their data directories now; their peak memory at the end (the take-ups read the logs too).
        let serversDisk = directoryBytes(cluster.directory)
        let memoryShare = references.map { Double(halves.map(\.peakMemory).max() ?? 0) / Double(max(1, $0.wholeCopy.peakMemory)) }
        let diskShare = references.map { Double(halves.map(\.disk).max() ?? 0) / Double(max(1, $0.wholeCopy.disk)) }
        log.say(String(format: "each of two gateways: peak memory %@ and %@, data %@ and %@", megabytes(halves[0].peakMemory),
                       megabytes(halves[1].peakMemory), megabytes(halves[0].disk), megabytes(halves[1].disk))
                + (memoryShare.map { String(format: "; against the whole copy %.2f (memory) and ", $0) } ?? "")
                + (diskShare.map { String(format: "%.2f (data)", $0) } ?? ""))
        log.say(String(format: "%@ registrations through both gateways in %.1f s (%@/s): %.1f µs of their CPU each; %d batches sent again after a 503",
                       ReportNumbers.grouped(Double(options.tokens)), bothSeconds, ReportNumbers.grouped(Double(options.tokens) / bothSeconds),
                       bothCPU, bothRetries) + (factor.map { String(format: "; two gateways on CPUs of their own take %.2f× one's", $0) } ?? ""))

        // A lost gateway and its replacement.
        stage.killAnotherGateway(0)
        let killed = monotonicNanoseconds()
        try waitUntil("g1 serves every registry partition again") { try first.servedPartitions(.registry).count == options.partitions }
        let failover = Double(monotonicNanoseconds() - killed) / 1e9
        let replacementStart = monotonicNanoseconds()
        let replacement = try stage.restartAnotherGateway(0, extraArguments: ["--store", storeSettings(cluster, instance: "g3")], emptyData: true)
        try waitUntil("the replacement serves its share of the registry", seconds: 600) {
            try replacement.servedPartitions(.registry).count >= options.partitions / 2 - 1
        }
        let served = Double(monotonicNanoseconds() - replacementStart) / 1e9
        let share = try replacement.servedPartitions(.registry)
        // Each partition it serves answers a token route through it, from what it read of the logs.
        let client = try replacement.connect()
        let partitioning = TokenPartitioning(ChannelPartitioning(count: options.partitions)!)
        var moving = 0
        for index in stride(from: 0, to: options.tokens, by: max(1, options.tokens / 256)) where share.contains(partitioning.partition(ofToken: tokens[index])) {
            // The user's own partition may still be moving (503): asked again, as a client does.
            var answer = try client.send("GET", "/v1/tokens?userId=u\(index)")
            for _ in 0..<100 where answer.status == 503 {
                moving += 1
                usleep(100_000)
                answer = try client.send("GET", "/v1/tokens?userId=u\(index)")
            }
            guard answer.status == 200, answer.text.contains(tokens[index]) else {
                throw LoadError("the replacement does not list u\(index)'s token: \(answer.status) \(answer.text.prefix(200))")
            }
        }
        let replacementPeak = stage.monitoredProcesses.first { $0.name == "gateway 2" }.map { processPeakResidentBytes(pid: $0.pid) } ?? 0
        log.say(String(format: "g2 killed: g1 served every registry partition %.1f s later; a replacement served its %d partitions %.1f s after its start "
                       + "(its peak memory %@)", failover, share.count, served, megabytes(replacementPeak)))
        // Where the replacement's take-ups spent their time (added over partitions taken up side by side).
        let metrics = try replacement.metrics()
        let read = { (name: String, part: String) in metrics.sum("touchline_cluster_registry_takeover_\(name)_total", matching: ["part": part]) }
        let takeover = (snapshotBytes: read("bytes", "snapshot"), snapshotSeconds: read("seconds", "snapshot"),
                        tailBytes: read("bytes", "tail"), tailSeconds: read("seconds", "tail"))
        log.say(String(format: "the replacement's take-ups: snapshots of %.0f MB in %.1f s, then the logs' tails of %.0f MB in %.1f s (partitions side by side)",
                       takeover.snapshotBytes / 1_048_576, takeover.snapshotSeconds, takeover.tailBytes / 1_048_576, takeover.tailSeconds))
        let servers = Footprint(peakMemory: cluster.runningProcesses.map { processPeakResidentBytes(pid: $0.pid) }.reduce(0, +), disk: serversDisk)
        log.say("the \(cluster.nodes.count) servers together: data \(megabytes(servers.disk)) after the registrations, peak memory \(megabytes(servers.peakMemory))")
        stage.stopGateways()
        await cluster.stop()

        return ScenarioResult(
            name: Self.name,
            description: "the partitioned token registry in gateway processes on a three-node cluster: registrations through one gateway and "
                + "through two, a replaced gateway taking its share up",
            parameters: [.init(name: "tokens per phase", value: String(options.tokens)), .init(name: "partitions", value: String(options.partitions)),
                         .init(name: "batch", value: String(options.batchSize))],
            durationSeconds: Double(monotonicNanoseconds() - started) / 1e9,
            throughputs: (references.map { [.init(name: "registrations through one gateway", unit: "tokens/s",
                                                  value: Double(options.tokens) / $0.aloneSeconds, ceilingRatio: 1)] } ?? [])
                + [.init(name: "registrations through two gateways", unit: "tokens/s", value: Double(options.tokens) / bothSeconds,
                         ceilingRatio: references.map { $0.aloneSeconds / bothSeconds })],
            tables: [.init(title: "Each gateway's memory and disk against one gateway holding the whole registry, and the servers'",
                           columns: ["", "peak resident memory (MB)", "data directory (MB)"],
                           rows: (references.map { [["the whole copy (one gateway, shared registry)", String($0.wholeCopy.peakMemory / 1_048_576),
                                                      String($0.wholeCopy.disk / 1_048_576)]] } ?? [])
                               + halves.enumerated().map { index, half in
                                   ["partitioned, gateway \(index + 1) of 2", String(half.peakMemory / 1_048_576), String(half.disk / 1_048_576)]
                               }
                               + [["partitioned, the replacement once it served its share", String(replacementPeak / 1_048_576), ""],
                                  ["the \(cluster.nodes.count) servers together (data after the registrations)", String(servers.peakMemory / 1_048_576),
                                   String(servers.disk / 1_048_576)]]),
                     .init(title: "Gateway CPU per registration and a replaced gateway",
                           columns: ["one gateway µs/token", "two gateways µs/token (both)", "two on CPUs of their own / one",
                                     "failover of the registry (s)", "replacement serving its share (s)"],
                           rows: [[references.map { String(format: "%.1f", $0.aloneCPU) } ?? "not measured", String(format: "%.1f", bothCPU),
                                   factor.map { String(format: "%.2f", $0) } ?? "not measured",
                                   String(format: "%.1f", failover), String(format: "%.1f", served)]]),
                     .init(title: "The replacement's take-ups (partitions side by side: seconds add up over them)",
                           columns: ["snapshots restored (MB)", "their seconds", "log tails applied (MB)", "their seconds"],
                           rows: [[String(format: "%.0f", takeover.snapshotBytes / 1_048_576), String(format: "%.1f", takeover.snapshotSeconds),
                                   String(format: "%.0f", takeover.tailBytes / 1_048_576), String(format: "%.1f", takeover.tailSeconds)]])],
            checks: (factor.map { [.init(name: "registrations two gateways take in one's time, by CPU", measured: $0, target: options.throughputTarget,
                                         comparison: .atLeast)] } ?? [])
                + [.init(name: "a replaced gateway serving its share of the registry (s)", measured: served,
                         target: options.replacedTargetSeconds, comparison: .atMost)]
                + (memoryShare.map { [.init(name: "peak memory per gateway of two / the whole copy's", measured: $0, target: options.perGatewayShareTarget,
                                            comparison: .atMost)] } ?? [])
                + (diskShare.map { [.init(name: "data per gateway of two / the whole copy's", measured: $0, target: options.perGatewayShareTarget,
                                          comparison: .atMost)] } ?? []),
            notes: ["Each token follows team:ARS and belongs to a user of its own, so each registration also notes its user in the user's partition.",
                    "Through two gateways, half the requests go to each: each list is cut by partition and the parts of the other's partitions "
                        + "are handed to it over NATS request-reply.",
                    "Failover is the lease's time (3 s) plus reading the partitions' logs; the replacement starts with an empty data directory.",
                    "Batches answered 503 (a partition moving) and sent again: \(references.map { String($0.retries) } ?? "not measured") through "
                        + "one gateway, \(bothRetries) through two.",
                    "Memory is each gateway's peak resident set while it registered; data, its data directory's files after.",
                    "Token lists through the replacement answered 503 (a user's partition still moving) and asked again: \(moving)."]
                + (references == nil ? ["--skip-references: the whole copy and the one gateway were not measured, nor the figures "
                                         + "against them."] : []))
    }

    /// What the two gateways are held against: one gateway's whole copy (its peak memory and
    /// data) and one partitioned gateway's CPU per registration, each measured on a fresh cluster.
    private struct References {
        var wholeCopy: Footprint
        var aloneSeconds: Double
        var aloneCPU: Double
        var retries: Int
    }

    /// Phases 0 and 1: `tokens` registered into one gateway's whole copy, then through one
    /// partitioned gateway owning every partition.
    private func measureReferences(_ tokens: [String], registration: TokenRegistration, stage: LoadStage, log: ScenarioLog) async throws -> References {
        var cluster = try await startCluster(on: stage)
        let whole = try stage.startGateway(extraArguments: ["--store", storeSettings(cluster, instance: "g0", registry: "shared")])
        var phase = try PhaseMeasurement(stage: stage)
        let wholeSeconds = try registration.register(tokens, follow: "team:ARS", users: "u", retries: 50, connect: { _ in try whole.connect() })
        let wholeCopy = Footprint(peakMemory: try phase.finish().peakResidentBytes(of: "gateway"),
                                  disk: directoryBytes(stage.dataDirectory(ofGateway: 0)))
        log.say(String(format: "%@ registrations into one gateway's whole copy in %.1f s: its peak memory %@, its data %@",
                       ReportNumbers.grouped(Double(options.tokens)), wholeSeconds, megabytes(wholeCopy.peakMemory), megabytes(wholeCopy.disk)))
        stage.stopGateways()
        await cluster.stop()

        cluster = try await startCluster(on: stage)
        let first = try stage.startGateway(extraArguments: ["--store", storeSettings(cluster, instance: "g1")], emptyData: true)
        try waitUntil("g1 serves every registry partition") { try first.servedPartitions(.registry).count == options.partitions }
        let retriedBefore = registration.retried.load(ordering: .relaxed)
        phase = try PhaseMeasurement(stage: stage)
        let aloneSeconds = try registration.register(tokens, follow: "team:ARS", users: "u", retries: 50, connect: { _ in try first.connect() })
        let aloneCPU = try phase.finish().cpuSeconds(of: "gateway") * 1e6 / Double(options.tokens)
        let retries = registration.retried.load(ordering: .relaxed) - retriedBefore
        log.say(String(format: "%@ registrations through one gateway in %.1f s (%@/s): %.1f µs of its CPU each; %d batches sent again after a 503",
                       ReportNumbers.grouped(Double(options.tokens)), aloneSeconds, ReportNumbers.grouped(Double(options.tokens) / aloneSeconds),
                       aloneCPU, retries))
        stage.stopGateways()
        await cluster.stop()
        return References(wholeCopy: wholeCopy, aloneSeconds: aloneSeconds, aloneCPU: aloneCPU, retries: retries)
    }

    /// Peak resident memory and data directory's bytes (a gateway's, or the servers' together), in bytes.
    private struct Footprint {
        var peakMemory: Int
        var disk: Int
    }

    /// A fresh three-node cluster, its servers measured with the stage's processes.
    private func startCluster(on stage: LoadStage) async throws -> NATSCluster {
        let cluster = try await NATSCluster.start(size: 3)
        stage.companionProcesses = cluster.runningProcesses.map { ("NATS \($0.name)", $0.pid) }
        return cluster
    }

    private func megabytes(_ bytes: Int) -> String { String(format: "%.0f MB", Double(bytes) / 1_048_576) }

    private func storeSettings(_ cluster: NATSCluster, instance: String, registry: String = "partitioned") -> String {
        let servers = cluster.urls.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"backend":"jetstream","servers":[\#(servers)],"instance":"\#(instance)","partitions":\#(options.partitions),"registry":"\#(registry)"}"#
    }

    private func waitUntil(_ what: String, seconds: Double = 120, _ condition: () throws -> Bool) throws {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        while !((try? condition()) ?? false) {
            guard monotonicNanoseconds() < deadline else { throw LoadError("\(what): not within \(Int(seconds)) s") }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
}
