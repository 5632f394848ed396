import Foundation
import LoadKit
import Measurements
import Synchronization
import TouchlineCore

/// `ingest-burst`: the maximum durable ingest rate, then the ingest→APNs latency of paced events.
///
/// Burst: batches of events over keep-alive connections, one request at a time each, for a fixed
/// time; an event counts once the gateway answered 202 (committed to SQLite). Latency: single
/// events paced over channels whose rate limit lets every change through, timed from the
/// event's send to the mock's receipt of the broadcast, while ``MachineNoise`` measures the
/// machine's own noise beside it. Held to at least 50,000 events/s, and to an ingest→APNs p99 of
/// at most ``Options/noiseRatioTarget`` times the machine's reference (a loopback round trip plus
/// an fdatasync, each at its p99, measured in the same phase): an absolute 5 ms held on a quiet
/// machine and failed on a busy one with the same build. A phase whose load generator fell
/// behind its own schedule (send-started-late p99 over ``Options/latenessLimitMilliseconds``)
/// measured the generator, not the gateway: its latency check is reported as invalid.
struct IngestBurst {
    struct Options {
        var channels = 1_000
        var connections = 8
        /// Each connection sends one request at a time: with 8, a slot every 4 ms met answers of
        /// 2-5 ms and the generator fell hundreds of ms behind (the "send started late" p99).
        var latencyConnections = 32
        var batchSize = 100
        var burstSeconds = 10.0
        var latencySeconds = 10.0
        var eventsPerChannelPerSecond = 2.0
        var ingestTarget = 50_000.0
        /// The p99 of issue 2, shown beside the ratio; no longer a check of its own.
        var latencyTargetMilliseconds = 5.0
        /// Ingest→APNs p99 divided by the machine's reference p99, at most: about three times what
        /// quiet runs gave on the 2-CPU reference host (1.8 to 3.1), so a change that triples
        /// the p99 fails while a noisy run (5.5) does not.
        var noiseRatioTarget = 8.0
        /// A paced phase whose sender started late by more than this (p99) is invalid.
        var latenessLimitMilliseconds = 20.0
    }

    static let name = "ingest-burst"

    let options: Options
    let settings: LoadSettings

    func run() throws -> ScenarioResult {
        let stage = try LoadStage(settings: settings, pinMock: false)
        let gateway = try stage.startGateway()
        let log = ScenarioLog(Self.name)
        log.say("\(options.channels) channels, \(options.connections) connections x batches of \(options.batchSize); \(stage.placement.description)")
        let burstChannels = (0..<options.channels).map { String(format: "burst-%05d", $0) }
        let latencyChannels = (0..<options.channels).map { String(format: "paced-%05d", $0) }
        try ChannelCreation.create(burstChannels, connect: gateway.connector)
        try ChannelCreation.create(latencyChannels, policy: ChannelCreation.unthrottledPolicy, connect: gateway.connector)

        var timeline = ScenarioTimeline()
        LoadProgress.shared.phase("burst", expectedSeconds: options.burstSeconds)
        var phase = try PhaseMeasurement(stage: stage)
        let burst = try EventBurst(connections: options.connections, batchSize: options.batchSize, seconds: options.burstSeconds)
            .run(burstChannels, gateways: [gateway.connector])
        let burstFigures = try phase.finish()
        timeline.add(burstFigures, label: "burst")
        log.say(String(format: "%@ events acknowledged in %.1f s: %@ events/s", ReportNumbers.grouped(Double(burst.events)), burst.seconds, ReportNumbers.grouped(burst.rate)))

        // The burst channels' last states wait up to one minimum interval for their tokens; let
        // them go out before the latency phase so that they do not share its time.
        Thread.sleep(forTimeInterval: 3)
        LoadProgress.shared.phase("paced events", expectedSeconds: options.latencySeconds)
        phase = try PhaseMeasurement(stage: stage)
        let probe = try MachineNoise(directory: stage.directory)
        let timings = try PacedEvents(channels: latencyChannels, connections: options.latencyConnections,
                                      eventsPerChannelPerSecond: options.eventsPerChannelPerSecond)
            .run(seconds: options.latencySeconds, connect: gateway.connector)
        let noise = try probe.finish()
        Thread.sleep(forTimeInterval: 1)
        let pacedFigures = try phase.finish()
        timeline.add(pacedFigures, label: "paced events")
        let latency = pacedFigures.arrivals.latency(endpoint: "broadcast").summary
        let lateness = LatencyHistogram(milliseconds: timings.map(\.late)).summary
        log.say(String(format: "%d paced events, %d broadcasts: ingest→APNs p50 %.2f ms, p99 %.2f ms; machine reference p99 %.2f ms, "
                           + "sender late p99 %.2f ms", timings.count, latency.count, latency.p50, latency.p99, noise.referenceP99, lateness.p99))

        LoadProgress.shared.phase("h2load ceiling")
        phase = try PhaseMeasurement(stage: stage)
        let ceiling = try stage.standardCeiling()
        timeline.add(try phase.finish(), label: "h2load ceiling")
        let pushesDuringBurst = burstFigures.arrivals.arrivals(endpoint: "broadcast").total
        let pushRate = Double(pushesDuringBurst) / burst.seconds
        return ScenarioResult(
            name: Self.name,
            description: "durable ingest at full speed (batches, one request at a time per connection), then ingest→APNs of paced events",
            parameters: [.init(name: "channels", value: String(options.channels)), .init(name: "connections", value: String(options.connections)),
                         .init(name: "batch", value: String(options.batchSize)), .init(name: "burst seconds", value: String(options.burstSeconds)),
                         .init(name: "paced events", value: "\(options.eventsPerChannelPerSecond)/s per channel for \(options.latencySeconds) s"),
                         .init(name: "placement", value: stage.placement.description)],
            durationSeconds: timeline.seconds,
            throughputs: [.init(name: "durable ingest", unit: "events/s", value: burst.rate, ceilingRatio: burst.rate / ceiling.requestsPerSecond),
                          .init(name: "broadcasts during the burst", unit: "pushes/s", value: pushRate, ceilingRatio: pushRate / ceiling.requestsPerSecond),
                          .init(name: "h2load ceiling (device pushes)", unit: "pushes/s", value: ceiling.requestsPerSecond, ceilingRatio: 1)],
            latencies: [.init(name: "ingest→APNs, paced events", summary: latency, note: "event sent → mock received the broadcast"),
                        .init(name: "event sent → 202 (durable), paced", summary: LatencyHistogram(milliseconds: timings.map(\.acknowledged)).summary),
                        .init(name: "paced send started late", summary: lateness,
                              note: "the load generator's own stalls, waits for the previous answer excluded"),
                        .init(name: "machine: loopback round trip", summary: noise.loopbackRoundTrip.summary,
                              note: "one byte over plain TCP on 127.0.0.1, every 10 ms beside the paced phase"),
                        .init(name: "machine: 4 KB write + fdatasync", summary: noise.fdatasync.summary, note: "on the gateway's file system"),
                        .init(name: "machine: probe woke late", summary: noise.wakeLateness.summary, note: "the scheduler's own delay")],
            processes: burstFigures.processRows(operations: burst.events),
            tables: [.init(title: "Coalescing during the burst", columns: ["events acknowledged", "broadcasts sent", "events per push"],
                           rows: [[ReportNumbers.grouped(Double(burst.events)), ReportNumbers.grouped(Double(pushesDuringBurst)),
                                   String(format: "%.1f", Double(burst.events) / Double(max(1, pushesDuringBurst)))]]),
                     timeline.phaseTable],
            series: [.init(name: "events acknowledged", unit: "events/s", kind: .throughput, timeSeries: burst.perSecond)] + timeline.series,
            checks: [.init(name: "durable ingest / 50,000 events/s", measured: burst.rate / options.ingestTarget, target: 1, comparison: .atLeast),
                     ScenarioResult.Check(name: "ingest→APNs p99 / machine reference p99 (loopback round trip + fdatasync)",
                                          measured: latency.p99 / noise.referenceP99, target: options.noiseRatioTarget, comparison: .atMost)
                        .invalid(when: lateness.p99 > options.latenessLimitMilliseconds,
                                 because: String(format: "the load generator started sends late by p99 %.1f ms, over %.0f ms", lateness.p99,
                                                 options.latenessLimitMilliseconds)),
                     .init(name: "every paced event broadcast", measured: Double(latency.count) / Double(max(1, timings.count)), target: 1,
                           comparison: .atLeast)],
            notes: [String(format: "Ingest→APNs p99 %.2f ms: %.2f× the 5 ms of issue 2, %.2f× the machine's reference of %.3f ms "
                               + "(loopback round trip p99 %.3f ms + fdatasync p99 %.3f ms) measured in the same phase.", latency.p99,
                           latency.p99 / options.latencyTargetMilliseconds, latency.p99 / noise.referenceP99, noise.referenceP99,
                           noise.loopbackRoundTrip.summary.p99, noise.fdatasync.summary.p99)])
    }
}
