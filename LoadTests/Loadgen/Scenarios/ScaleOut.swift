import Foundation
import LoadKit
import Measurements
import NATS
import NATSServers
import TouchlineCore
import TouchlineRuntime

/// `scale-out`: two gateways on a three-node NATS JetStream cluster (`store.backend:
/// "jetstream"`), all on loopback, against the cluster's own ceiling and a gateway on SQLite, in
/// one run.
///
/// 1. Durable ingest through both gateways (each connection sends its batches to them in turn,
///    so half of them are handed to the owning gateway), against the ceiling: acknowledged
///    publishes from one plain client to streams set up like the partition logs, with the
///    messages' average size measured from the gateways' own logs, converted to events with the
///    events per logged message of the same burst (information only: the ceiling's publisher
///    sends ready-made bytes while the gateways share the CPUs). Then the same burst with each
///    batch sent to its channel's owner, as a balancer routing by channel would.
/// 2. ingest→APNs of paced events posted to the first gateway (half handed over), on at most
///    ``pacedChannels`` channels.
/// 3. The same burst against a gateway on SQLite, as fast as it goes; then both backends' bursts
///    again (to the owners on the cluster) at one rate, 0.8 of the slower one's: gateway CPU per
///    event, cluster against embedded at equal rates (a gateway's CPU per event falls as its rate
///    rises: more events share each wake-up and each commit); then the paced events on SQLite:
///    ingest→APNs, cluster against embedded.
/// 4. Failover, `kills` kills and `pauses` pauses of a gateway (ScaleOut+Failover.swift).
///
/// Checks: gateway CPU per event on JetStream sent to the owners at most 1.15× SQLite's at one
/// rate (half handed over: 1.6× SQLite's at full speed), every paced event broadcast, the
/// cluster's ingest→APNs p99 at most 3× the SQLite gateway's, failover (fault to every moved
/// channel's first push) at most 2 s at the p99 over the kills and pauses together, no
/// acknowledged event lost in them.
struct ScaleOut {
    struct Options {
        var channels = 200
        var connections = 8
        var batchSize = 100
        var burstSeconds = 10.0
        var latencySeconds = 10.0
        var eventsPerChannelPerSecond = 2.0
        var partitions = 16
        var replicas = 3
        /// Gateway CPU per acknowledged event on JetStream, each batch sent to its channel's
        /// owner, against one SQLite gateway's at the same event rate (issue 34).
        var perEventTarget = 1.15
        /// The same with half the batches handed over between the gateways: each is parsed twice
        /// and crosses NATS twice more, so it costs more by design; held to what it cost before
        /// the hand-over was measured apart (1.37 at 100 channels).
        var handedOverPerEventTarget = 1.6
        /// ingest→APNs p99 of the paced events through the cluster (half handed over) against
        /// the same on one SQLite gateway (issue 34).
        var latencyTarget = 3.0
        /// Failover rounds: SIGKILL and SIGSTOP of a gateway (issue 34: at least 20 of each).
        var kills = 20
        var pauses = 20
        /// The failover pair's lease TTL (the other lease durations in the standard proportions).
        var leaseTTLMilliseconds = 1_500
        /// Fault to every moved channel's first push, at the p99 of the kills and pauses (issue 34).
        var failoverTargetMilliseconds = 2_000.0
    }

    static let name = "scale-out"
    /// The paced phase's channels at most: its latency is per event, and this many channels at
    /// two events a second already keep the gateways busy.
    static let pacedChannels = 200

    let options: Options
    let settings: LoadSettings

    func run() async throws -> ScenarioResult {
        let log = ScenarioLog(Self.name)
        // The stage first: it pins this process (all its threads) before the cluster's start
        // makes threads that may end while they are pinned. Every channel of both bursts, the
        // paced phases and the failover rounds stays live at the mock.
        let stage = try LoadStage(settings: settings, pinMock: true,
                                  mockArguments: ["--channel-limit", String(2 * options.channels + 3 * Self.pacedChannels)])
        let cluster = try await NATSCluster.start(size: 3)
        stage.companionProcesses = cluster.runningProcesses.map { ("NATS \($0.name)", $0.pid) }
        try Self.pinServers(cluster, to: stage.placement)
        let first = try stage.startGateway(extraArguments: ["--store", storeSettings(cluster, instance: "g1")])
        let second = try stage.startAnotherGateway(extraArguments: ["--store", storeSettings(cluster, instance: "g2")])
        let gateways = [first, second]
        log.say("\(options.channels) channels over \(options.partitions) partitions, 2 gateways, 3 NATS servers (\(options.replicas) replicas); "
                + "\(options.connections) connections x batches of \(options.batchSize); \(placement(of: stage))")
        try waitUntilBothServe(gateways)
        let burstChannels = (0..<options.channels).map { String(format: "burst-%05d", $0) }
        let pacedChannels = (0..<min(options.channels, Self.pacedChannels)).map { String(format: "paced-%05d", $0) }
        try ChannelCreation.create(burstChannels, connect: first.connector)
        try ChannelCreation.create(pacedChannels, policy: ChannelCreation.unthrottledPolicy, connect: first.connector)

        var timeline = ScenarioTimeline()
        let burst = EventBurst(connections: options.connections, batchSize: options.batchSize, seconds: options.burstSeconds)
        let logsBefore = try partitionLogs(cluster)
        var phase = try PhaseMeasurement(stage: stage)
        let clustered = try burst.run(burstChannels, gateways: gateways.map(\.connector))
        let clusteredFigures = try phase.finish()
        timeline.add(clusteredFigures, label: "burst on JetStream")
        let logsAfter = try partitionLogs(cluster)
        let logged = max(1, Int(logsAfter.messages) - Int(logsBefore.messages))
        let messageBytes = Int((logsAfter.bytes - logsBefore.bytes) / UInt64(logged))
        let eventsPerMessage = Double(clustered.events) / Double(logged)
        log.say(String(format: "%@ events acknowledged in %.1f s through both gateways: %@ events/s (%d log messages of %d bytes on average)",
                       ReportNumbers.grouped(Double(clustered.events)), clustered.seconds, ReportNumbers.grouped(clustered.rate), logged, messageBytes))

        // The same burst again, each batch sent to its channel's owner (as a balancer routing by
        // channel would): the cluster's cost without the hand-over.
        let owners = try ownerOfEachPartition(gateways)
        let partitioning = ChannelPartitioning(count: options.partitions)!
        let owner: @Sendable (String) -> Int = { owners[partitioning.partition(of: $0)] ?? 0 }
        var toOwners = burst
        toOwners.seqsAfter = 1_000_000_000
        phase = try PhaseMeasurement(stage: stage)
        let direct = try toOwners.run(burstChannels, gateways: gateways.map(\.connector), route: owner)
        let directFigures = try phase.finish()
        timeline.add(directFigures, label: "burst on JetStream, to the owners")
        log.say(String(format: "the same burst sent to each channel's owner: %@ events/s", ReportNumbers.grouped(direct.rate)))

        phase = try PhaseMeasurement(stage: stage)
        let ceiling = try JetStreamPublishCeiling(partitions: options.partitions, replicas: options.replicas, messageBytes: messageBytes,
                                                  seconds: options.burstSeconds).run(on: cluster)
        let ceilingFigures = try phase.finish()
        timeline.add(ceilingFigures, label: "ceiling publisher")
        let ceilingEvents = ceiling.rate * eventsPerMessage
        log.say(String(format: "ceiling: %@ acknowledged publishes/s of %d bytes, i.e. %@ events/s", ReportNumbers.grouped(ceiling.rate), messageBytes,
                       ReportNumbers.grouped(ceilingEvents)))

        let clusterPaced = try await paced(pacedChannels, through: first, label: "paced events", stage: stage, timeline: &timeline)
        let (timings, latency) = (clusterPaced.timings, clusterPaced.latency)
        log.say(String(format: "%d paced events, %d broadcasts: ingest→APNs p50 %.2f ms, p99 %.2f ms", timings.count, latency.count, latency.p50, latency.p99))

        let embedded = try stage.startAnotherGateway(extraArguments: [])
        let embeddedChannels = burstChannels.map { "sqlite-" + $0 }
        try ChannelCreation.create(embeddedChannels, connect: embedded.connector)
        phase = try PhaseMeasurement(stage: stage)
        let alone = try burst.run(embeddedChannels, gateways: [embedded.connector])
        let embeddedFigures = try phase.finish()
        timeline.add(embeddedFigures, label: "burst on SQLite")
        log.say(String(format: "the same burst on one SQLite gateway: %@ events/s", ReportNumbers.grouped(alone.rate)))
        // Both backends again at one rate below both their full speeds: CPU per event compared
        // at equal rates.
        let commonRate = Self.commonRateShare * min(direct.rate, alone.rate)
        var atCommonRate = burst
        atCommonRate.eventsPerSecond = commonRate
        atCommonRate.seqsAfter = 1_000_000_000
        phase = try PhaseMeasurement(stage: stage)
        let alonePaced = try atCommonRate.run(embeddedChannels, gateways: [embedded.connector])
        let embeddedPacedFigures = try phase.finish()
        timeline.add(embeddedPacedFigures, label: "burst on SQLite at the common rate")
        atCommonRate.seqsAfter = 2_000_000_000
        phase = try PhaseMeasurement(stage: stage)
        let directPaced = try atCommonRate.run(burstChannels, gateways: gateways.map(\.connector), route: owner)
        let directPacedFigures = try phase.finish()
        timeline.add(directPacedFigures, label: "burst on JetStream, to the owners, at the common rate")
        log.say(String(format: "both bursts again at %@ events/s: %@ events/s on SQLite, %@ on JetStream to the owners",
                       ReportNumbers.grouped(commonRate), ReportNumbers.grouped(alonePaced.rate), ReportNumbers.grouped(directPaced.rate)))

        // The paced events again, on the SQLite gateway: the cluster's ingest→APNs against one gateway's.
        let embeddedPacedChannels = pacedChannels.map { "sqlite-" + $0 }
        try ChannelCreation.create(embeddedPacedChannels, policy: ChannelCreation.unthrottledPolicy, connect: embedded.connector)
        let embeddedPaced = try await paced(embeddedPacedChannels, through: embedded, label: "paced events on SQLite", stage: stage, timeline: &timeline)
        let (embeddedTimings, embeddedLatency) = (embeddedPaced.timings, embeddedPaced.latency)
        log.say(String(format: "%d paced events on the SQLite gateway, %d broadcasts: ingest→APNs p50 %.2f ms, p99 %.2f ms", embeddedTimings.count,
                       embeddedLatency.count, embeddedLatency.p50, embeddedLatency.p99))
        phase = try PhaseMeasurement(stage: stage)
        let failover = try failoverRounds(stage: stage, cluster: cluster, log: log)
        timeline.add(try phase.finish(), label: "failover rounds")
        log.say(String(format: "%d failovers (%d kills, %d pauses, lease TTL %d ms): fault → every moved channel's first push p50 %.0f ms, p99 %.0f ms, max %.0f ms; %d of %d acknowledged events lost",
                       failover.rounds.count, options.kills, options.pauses, options.leaseTTLMilliseconds, failover.summary(of: nil, \.firstPushMilliseconds).p50,
                       failover.summary(of: nil, \.firstPushMilliseconds).p99, failover.summary(of: nil, \.firstPushMilliseconds).max, failover.lost, failover.checked))
        stage.stopGateways()
        await cluster.stop()

        let gatewaysCPU = { (figures: PhaseFigures) in figures.cpuSeconds(of: "gateway") + figures.cpuSeconds(of: "gateway 2") }
        let serversCPU = { (figures: PhaseFigures) in cluster.nodes.map { figures.cpuSeconds(of: "NATS \($0.name)") }.reduce(0, +) }
        let embeddedCPU = embeddedFigures.cpuSeconds(of: "gateway 3")
        let perEvent = { (seconds: Double, events: Int) in seconds * 1e6 / Double(max(1, events)) }
        let embeddedPerEvent = perEvent(embeddedCPU, alone.events)
        let embeddedPacedPerEvent = perEvent(embeddedPacedFigures.cpuSeconds(of: "gateway 3"), alonePaced.events)
        let directPacedPerEvent = perEvent(gatewaysCPU(directPacedFigures), directPaced.events)
        let handedOverPerEvent = perEvent(gatewaysCPU(clusteredFigures), clustered.events)
        let directPerEvent = perEvent(gatewaysCPU(directFigures), direct.events)
        return ScenarioResult(
            name: Self.name,
            description: "two gateways on a three-node NATS JetStream cluster: durable ingest against the cluster's own ceiling, ingest→APNs, and CPU per event against one gateway on SQLite",
            parameters: [.init(name: "channels", value: String(options.channels)), .init(name: "partitions", value: String(options.partitions)),
                         .init(name: "replicas", value: String(options.replicas)), .init(name: "connections", value: String(options.connections)),
                         .init(name: "batch", value: String(options.batchSize)), .init(name: "burst seconds", value: String(options.burstSeconds)),
                         .init(name: "placement", value: placement(of: stage))],
            durationSeconds: timeline.seconds,
            throughputs: [.init(name: "durable ingest, 2 gateways on JetStream", unit: "events/s", value: clustered.rate, ceilingRatio: clustered.rate / ceilingEvents),
                          .init(name: "durable ingest, 2 gateways on JetStream, each batch to its owner", unit: "events/s", value: direct.rate,
                                ceilingRatio: direct.rate / ceilingEvents),
                          .init(name: "cluster ceiling (plain publisher, same messages)", unit: "events/s", value: ceilingEvents, ceilingRatio: 1),
                          .init(name: "durable ingest, 1 gateway on SQLite", unit: "events/s", value: alone.rate, ceilingRatio: alone.rate / ceilingEvents)],
            latencies: [.init(name: "ingest→APNs, paced events", summary: latency, note: "posted to one gateway; half handed to the other"),
                        .init(name: "ingest→APNs, paced events, one gateway on SQLite", summary: embeddedLatency),
                        .init(name: "event sent → 202 (durable), paced", summary: LatencyHistogram(milliseconds: timings.map(\.acknowledged)).summary),
                        .init(name: "paced send started late", summary: LatencyHistogram(milliseconds: timings.map(\.late)).summary,
                              note: "stalls of the load generator that the other figures would hide"),
                        .init(name: "event sent → 202, warm-up second after the idle, cluster", summary: LatencyHistogram(milliseconds: clusterPaced.warmUp.map(\.acknowledged)).summary,
                              note: "not in the ratio: each partition log's first write after 10 s idle reads its last block back on every replica"),
                        .init(name: "event sent → 202, warm-up second after the idle, SQLite", summary: LatencyHistogram(milliseconds: embeddedPaced.warmUp.map(\.acknowledged)).summary),
                        .init(name: "failover: kill or pause → every moved channel's first push", summary: failover.summary(of: nil, \.firstPushMilliseconds),
                              note: "\(options.kills) kills and \(options.pauses) pauses of a gateway, lease TTL \(options.leaseTTLMilliseconds) ms"),
                        .init(name: "failover: kill → every moved channel's first push", summary: failover.summary(of: .kill, \.firstPushMilliseconds)),
                        .init(name: "failover: pause → every moved channel's first push", summary: failover.summary(of: .pause, \.firstPushMilliseconds)),
                        .init(name: "failover: kill or pause → every moved channel acknowledged again", summary: failover.summary(of: nil, \.acknowledgedMilliseconds))],
            processes: clusteredFigures.processRows(operations: clustered.events),
            tables: [.init(title: "CPU per acknowledged event during the bursts", columns: ["backend", "gateways µs", "NATS servers µs", "events/s"],
                           rows: [["JetStream (2 gateways), half handed over", String(format: "%.2f", handedOverPerEvent),
                                   String(format: "%.2f", perEvent(serversCPU(clusteredFigures), clustered.events)), ReportNumbers.grouped(clustered.rate)],
                                  ["JetStream (2 gateways), each batch to its owner", String(format: "%.2f", directPerEvent),
                                   String(format: "%.2f", perEvent(serversCPU(directFigures), direct.events)), ReportNumbers.grouped(direct.rate)],
                                  ["SQLite (1 gateway)", String(format: "%.2f", embeddedPerEvent), "", ReportNumbers.grouped(alone.rate)],
                                  ["JetStream (2 gateways), each batch to its owner, at the common rate", String(format: "%.2f", directPacedPerEvent),
                                   String(format: "%.2f", perEvent(serversCPU(directPacedFigures), directPaced.events)), ReportNumbers.grouped(directPaced.rate)],
                                  ["SQLite (1 gateway), at the common rate", String(format: "%.2f", embeddedPacedPerEvent), "",
                                   ReportNumbers.grouped(alonePaced.rate)],
                                  // The plain publisher's messages in events, as the ceiling counts them (information only).
                                  ["ceiling publisher (no gateway)", "",
                                   String(format: "%.2f", perEvent(serversCPU(ceilingFigures), Int(Double(ceiling.messages) * eventsPerMessage))),
                                   ReportNumbers.grouped(ceilingEvents)]]),
                     .init(title: "The cluster's log during the burst", columns: ["log messages", "bytes per message", "events per message"],
                           rows: [[ReportNumbers.grouped(Double(logged)), String(messageBytes), String(format: "%.1f", eventsPerMessage)]]),
                     timeline.phaseTable],
            series: [.init(name: "events acknowledged on JetStream", unit: "events/s", kind: .throughput, timeSeries: clustered.perSecond),
                     .init(name: "events acknowledged on SQLite", unit: "events/s", kind: .throughput, timeSeries: alone.perSecond)] + timeline.series,
            checks: [.init(name: "gateway CPU per event, JetStream to the owners / SQLite at one rate",
                           measured: directPacedPerEvent / max(0.01, embeddedPacedPerEvent), target: options.perEventTarget, comparison: .atMost),
                     .init(name: "gateway CPU per event, JetStream half handed over / SQLite", measured: handedOverPerEvent / max(0.01, embeddedPerEvent),
                           target: options.handedOverPerEventTarget, comparison: .atMost),
                     .init(name: "failover p99, kills and pauses (ms)", measured: failover.summary(of: nil, \.firstPushMilliseconds).p99,
                           target: options.failoverTargetMilliseconds, comparison: .atMost),
                     .init(name: "acknowledged events lost in the failovers", measured: Double(failover.lost), target: 0, comparison: .atMost),
                     .init(name: "every paced event broadcast", measured: Double(latency.count) / Double(max(1, timings.count)), target: 1,
                           comparison: .atLeast),
                     .init(name: "ingest→APNs p99, cluster / one SQLite gateway", measured: latency.p99 / max(0.001, embeddedLatency.p99),
                           target: options.latencyTarget, comparison: .atMost)])
    }

    /// Snapshots are left out (the largest `snapshotLogBytes`), so that the log's messages and
    /// bytes during the burst are the batches' alone: the ceiling publisher sends the same.
    private func storeSettings(_ cluster: NATSCluster, instance: String) -> String {
        let servers = cluster.urls.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"backend":"jetstream","servers":[\#(servers)],"instance":"\#(instance)","partitions":\#(options.partitions),"replicas":\#(options.replicas),"snapshotLogBytes":1073741824}"#
    }

    /// The NATS servers on the mock's CPUs, when the run pins: as in production, where the
    /// servers have machines of their own, the gateways (the cluster's and the SQLite one) share
    /// their CPUs with the load generator alone in every phase. Unpinned, the cluster's gateways
    /// shared them with three busy servers and the SQLite gateway did not (benchmarks.md, "The
    /// cluster's cost per event").
    private static func pinServers(_ cluster: NATSCluster, to placement: CPUPlacement) throws {
        guard let cpus = placement.mock else { return }
        for server in cluster.runningProcesses where !runTool("/usr/bin/taskset", ["-a", "-p", "-c", cpus, String(server.pid)]) {
            throw LoadError("taskset could not pin NATS server \(server.name) to CPU \(cpus)")
        }
    }

    private func placement(of stage: LoadStage) -> String {
        stage.placement.mock == nil ? stage.placement.description : stage.placement.description + "; the NATS servers with the mock"
    }

    /// What a paced phase measured: each event's timing, ingest→APNs at the mock, and the
    /// timings of its warm-up second.
    struct PacedPhase {
        var timings: [PacedEvents.Timing]
        var latency: LatencySummary
        var warmUp: [PacedEvents.Timing]
    }

    /// Paced events on `channels` through `gateway`, once the gateways have settled after the
    /// phase before. A second of the same events goes first and is reported apart: the phases
    /// before leave each partition log's last message block idle for longer than the NATS
    /// servers keep it in memory (10 s), and the first write to each then reads it back on
    /// every replica, a cost of the idle, not of the steady latency this phase measures
    /// (docs/benchmarks.md, "The client's flusher, and the first write after an idle"). The SQLite
    /// gateway gets the same.
    private func paced(_ channels: [String], through gateway: GatewayTarget, label: String, stage: LoadStage,
                       timeline: inout ScenarioTimeline) async throws -> PacedPhase {
        try await Task.sleep(for: .seconds(3))
        var events = PacedEvents(channels: channels, connections: options.connections, eventsPerChannelPerSecond: options.eventsPerChannelPerSecond)
        _ = try stage.mock.takeArrivalReport()
        let warmUp = try events.run(seconds: Self.warmUpSeconds, connect: gateway.connector)
        try await Self.awaitBroadcasts(warmUp.count, at: stage.mock)
        // Above every seq of the warm-up (each channel's events there, rounded up).
        events.firstSeq = Int((Self.warmUpSeconds * options.eventsPerChannelPerSecond).rounded(.up)) + 1
        let phase = try PhaseMeasurement(stage: stage)
        let timings = try events.run(seconds: options.latencySeconds, connect: gateway.connector)
        try await Task.sleep(for: .seconds(1))
        let figures = try phase.finish()
        timeline.add(figures, label: label)
        return PacedPhase(timings: timings, latency: figures.arrivals.latency(endpoint: "broadcast").summary, warmUp: warmUp)
    }

    /// Waits until `mock` has accepted `count` broadcasts since its report was last taken. An
    /// event's 202 comes before its push leaves, so a phase started on the warm-up's last 202
    /// would count the warm-up's last pushes as its own.
    private static func awaitBroadcasts(_ count: Int, at mock: MockProcess, within limit: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + limit
        var arrived = 0
        while arrived < count {
            guard ContinuousClock.now < deadline else {
                throw LoadError("the mock accepted \(arrived) of the warm-up's \(count) broadcasts within \(limit)")
            }
            try await Task.sleep(for: .milliseconds(20))
            arrived += try mock.takeArrivalReport().latency(endpoint: "broadcast").count
        }
    }

    /// The common rate of the bursts that compare CPU per event, as a share of the slower
    /// backend's full speed: below both, so that each keeps the pace.
    static let commonRateShare = 0.8

    /// The paced phases' warm-up, in seconds: every channel gets its events in it.
    static let warmUpSeconds = 1.0

    /// Which of `gateways` serves each partition now, by their `/readyz`.
    func ownerOfEachPartition(_ gateways: [GatewayTarget]) throws -> [Int: Int] {
        var owners: [Int: Int] = [:]
        for (index, gateway) in gateways.enumerated() {
            for partition in try gateway.servedPartitions(.leases) { owners[partition] = index }
        }
        return owners
    }

    /// Until each gateway serves some partitions (they share them out at start).
    func waitUntilBothServe(_ gateways: [GatewayTarget]) throws {
        let deadline = monotonicNanoseconds() + 60_000_000_000
        for gateway in gateways {
            while try gateway.servedPartitions(.leases).isEmpty {
                guard monotonicNanoseconds() < deadline else { throw LoadError("a gateway serves no partition after 60 s") }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        // Let the partitions settle (a late joiner takes its share over a few lease rounds).
        Thread.sleep(forTimeInterval: 5)
    }

    /// Messages ever logged (the last sequences) and bytes kept in every partition log.
    private func partitionLogs(_ cluster: NATSCluster) throws -> (messages: UInt64, bytes: UInt64) {
        let loop = EventLoop.start(name: "log-reader")
        defer { loop.stopAndWait() }
        let connection = try NATSConnection.connect(NATSSettings(servers: cluster.urls, name: "log-reader"), loop: loop, events: { _ in })
        defer { connection.close() }
        let jetStream = try JetStream(connection)
        var total: (messages: UInt64, bytes: UInt64) = (0, 0)
        for partition in 0..<options.partitions {
            guard let state = try jetStream.streamState("TOUCHLINE_LOG_\(partition)") else { continue }
            total.messages += state.lastSequence
            total.bytes += state.bytes
        }
        return total
    }
}
