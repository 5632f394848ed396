import Foundation
import LoadKit
import Measurements
import Touchline

/// `kickoff-storm`: push-to-start to M tokens at kickoff (`POST /v1/channels/{id}/start`) while
/// the match channels keep broadcasting.
///
/// Each round has four phases: the kickoff alone (its fan-out rate), h2load sending the same
/// payload to the same token paths with the same concurrency and CPU priority (the ceiling),
/// the matches broadcasting alone, and the matches broadcasting through a new kickoff. Three
/// figures are held to issue 34's targets: fan-out rate / h2load ≥ 0.9 alone and ≥ 0.75 through
/// the matches, and the broadcasts' ingest→APNs p99 during the storm / alone ≤ 1.5.
struct KickoffStorm {
    struct Options {
        var tokens = 1_000_000
        var rounds = 3
        var registrationBatch = 5_000
        var matches = 500
        var eventsPerMatchPerSecond = 2.0
        var latencyConnections = 8
        var mockThreads: Int?
        var personalConnections: Int?
        var personalInFlight: Int?
        var rateTarget = 0.9
        var stormRateTarget = 0.75
        var isolationTarget = 1.5
    }

    static let name = "kickoff-storm"
    static let follow = "team:BENCH"

    let options: Options
    let settings: LoadSettings

    /// The personal queue's concurrency: the gateway's defaults unless set. The gateway is
    /// started with exactly these and h2load gets the same (connections, streams split evenly).
    var connections: Int { options.personalConnections ?? PersonalQueueSettings().connections }
    var inFlight: Int { options.personalInFlight ?? PersonalQueueSettings().maxInFlight }
    /// The personal loop's CPU priority; h2load runs at the same.
    var niceness: Int { PersonalQueueSettings().niceness }

    func run() throws -> ScenarioResult {
        let stage = try LoadStage(settings: settings, pinMock: true, mockThreads: options.mockThreads)
        let gateway = try stage.startGateway(extraArguments: [
            "--personal-queue", #"{"connections": \#(connections), "maxInFlight": \#(inFlight), "niceness": \#(niceness)}"#,
        ])
        let log = ScenarioLog(Self.name)
        log.say("\(options.tokens) push-to-start tokens following \(Self.follow); \(options.matches) match channels; "
                + "\(connections) connections x \(inFlight / connections) streams at niceness \(niceness); \(stage.placement.description)")

        let tokens = TokenRegistration.deviceTokens(options.tokens)
        let registration = try TokenRegistration(batchSize: options.registrationBatch).register(tokens, follow: Self.follow,
                                                                                                connect: gateway.connector)
        log.say(String(format: "%d tokens registered in %.1f s (%.0f tokens/s)", tokens.count, registration, Double(tokens.count) / registration))
        let matchIDs = (0..<options.matches).map { String(format: "storm-match-%04d", $0) }
        _ = try ChannelCreation.create(matchIDs, policy: ChannelCreation.unthrottledPolicy, connect: gateway.connector)
        // Each kickoff starts the followers into a channel of its own: the gateway starts a device
        // at most once into one APNs channel, so a second kickoff of one channel would start no one.
        // The ids are of one length, so every kickoff's payload is as large as h2load's.
        let kickoffIDs = (0..<2 * options.rounds).map { String(format: "storm-kickoff-%04d", $0) }
        let kickoffAPNsIDs = try ChannelCreation.create(kickoffIDs, policy: ChannelCreation.unthrottledPolicy, connect: gateway.connector)
        func kickoff(_ number: Int) -> KickoffRequest {
            KickoffRequest(channelID: kickoffIDs[number], apnsChannelID: kickoffAPNsIDs[kickoffIDs[number]]!, follow: Self.follow)
        }
        let pushes = LoadStage.DevicePushes(tokens: tokens, payload: kickoff(0).payload, priority: 10)
        // Opened only now: a connection that sends no request within the gateway's first-request
        // deadline (http.firstRequestTimeoutMilliseconds) is closed, and registering a million
        // tokens takes longer.
        let api = try gateway.connect()

        var timeline = ScenarioTimeline()
        var rounds: [Round] = []
        for number in 1...options.rounds {
            var round = Round()
            // The kickoff alone.
            var phase = try PhaseMeasurement(stage: stage)
            let alone = try PersonalJobPoller.wait(for: kickoff(number * 2 - 2).post(api: api), api: api, expected: tokens.count)
            var figures = try phase.finish()
            timeline.add(figures, label: "kickoff \(number)")
            round.fanOutRate = Double(alone.sent) / alone.seconds
            round.fanOutProcesses = figures.processRows(operations: tokens.count)
            round.gatewayCPUPerPush = figures.cpuSeconds(of: "gateway") * 1e6 / Double(tokens.count)
            // The ceiling.
            phase = try PhaseMeasurement(stage: stage)
            let reference = try stage.ceiling(pushes, connections: connections, streams: inFlight / connections, niceness: niceness)
            figures = try phase.finish()
            timeline.add(figures, label: "h2load \(number)")
            round.ceilingRate = reference.requestsPerSecond
            round.h2loadCPUPerPush = reference.cpuSeconds * 1e6 / Double(tokens.count)
            round.mockCPUPerPushUnderH2Load = figures.cpuSeconds(of: "mock APNs") * 1e6 / Double(tokens.count)
            // The matches alone, then through a kickoff, for about as long as a kickoff drains.
            let seconds = max(2, alone.seconds * 0.6)
            for storm in [false, true] {
                let pacer = PacedEvents(channels: matchIDs, connections: options.latencyConnections,
                                        eventsPerChannelPerSecond: options.eventsPerMatchPerSecond, firstSeq: (number * 2 + (storm ? 1 : 0)) * 1_000_000)
                phase = try PhaseMeasurement(stage: stage)
                let job = storm ? try kickoff(number * 2 - 1).post(api: api) : nil
                let timings = try pacer.run(seconds: seconds, connect: gateway.connector)
                let left = try job.map { tokens.count - (try PersonalJobPoller.progress(of: $0, api: api)).sent }
                let drained = try job.map { try PersonalJobPoller.wait(for: $0, api: api, expected: tokens.count) }
                Thread.sleep(forTimeInterval: 0.5)
                figures = try phase.finish()
                timeline.add(figures, label: storm ? "storm \(number)" : "matches \(number)")
                let broadcasts = figures.arrivals.latency(endpoint: "broadcast")
                round.complete = round.complete && broadcasts.count == timings.count && left != 0
                round.acknowledged.append(contentsOf: timings.map(\.acknowledged))
                let acknowledged = LatencyHistogram(milliseconds: timings.map(\.acknowledged)).summary.p99
                if storm { round.stormAcknowledgedP99 = acknowledged } else { round.aloneAcknowledgedP99 = acknowledged }
                if storm {
                    round.storm = broadcasts
                    round.stormFanOutRate = drained.map { Double($0.sent) / $0.seconds } ?? 0
                    round.leftWhenEventsEnded = left ?? 0
                } else {
                    round.alone = broadcasts
                }
            }
            log.say(String(format: "round %d: kickoff %.0f pushes/s, h2load %.0f req/s (%.2f); broadcast p99 alone %.2f ms, during the storm %.2f ms (%.2f), "
                           + "of which send → 202 %.2f and %.2f ms; %d pushes still queued when the events ended", number, round.fanOutRate,
                           round.ceilingRate, round.rateRatio, round.alone.summary.p99, round.storm.summary.p99, round.isolationRatio,
                           round.aloneAcknowledgedP99, round.stormAcknowledgedP99, round.leftWhenEventsEnded))
            rounds.append(round)
        }
        return result(rounds: rounds, timeline: timeline, registrationSeconds: registration, gatewayPeak: stage.gatewayProcess?.peakResidentBytes,
                      placement: stage.placement)
    }

    /// What one round measured.
    private struct Round {
        var fanOutRate = 0.0
        var ceilingRate = 0.0
        var stormFanOutRate = 0.0
        var fanOutProcesses: [ScenarioResult.ProcessUsage] = []
        var gatewayCPUPerPush = 0.0
        var h2loadCPUPerPush = 0.0
        var mockCPUPerPushUnderH2Load = 0.0
        var alone = LatencyHistogram()
        var storm = LatencyHistogram()
        var acknowledged: [Double] = []
        /// Event sent → 202, p99 of each phase: the part of the latency spent before the commit.
        var aloneAcknowledgedP99 = 0.0
        var stormAcknowledgedP99 = 0.0
        var leftWhenEventsEnded = 0
        /// Every paced event arrived as a broadcast, and the storm outlasted the events.
        var complete = true

        var rateRatio: Double { fanOutRate / ceilingRate }
        var stormRateRatio: Double { stormFanOutRate / ceilingRate }
        var isolationRatio: Double { storm.summary.p99 / alone.summary.p99 }
    }

    private func result(rounds: [Round], timeline: ScenarioTimeline, registrationSeconds: Double, gatewayPeak: Int?,
                        placement: CPUPlacement) -> ScenarioResult {
        let fanOut = median(rounds.map(\.fanOutRate)), ceiling = median(rounds.map(\.ceilingRate))
        let stormRate = median(rounds.map(\.stormFanOutRate))
        let aloneP99 = median(rounds.map(\.alone.summary.p99)), stormP99 = median(rounds.map(\.storm.summary.p99))
        // Each round's figures are compared with their own baseline, measured just before them on
        // the same machine state, then the median over the rounds is taken: the baseline of an
        // idle phase drifts between rounds (its p99 varied from 0.54 to 1.30 ms) more than a
        // pair does.
        let rateRatio = median(rounds.map(\.rateRatio)), isolationRatio = median(rounds.map(\.isolationRatio))
        let stormRateRatio = median(rounds.map(\.stormRateRatio))
        var alone = LatencyHistogram(), storm = LatencyHistogram()
        for round in rounds {
            alone.merge(round.alone)
            storm.merge(round.storm)
        }
        let complete = rounds.allSatisfy(\.complete)
        let perRound = rounds.enumerated().map { index, round in
            [String(index + 1), ReportNumbers.grouped(round.fanOutRate), String(format: "%.2f", round.gatewayCPUPerPush), ReportNumbers.grouped(round.ceilingRate),
             String(format: "%.2f", round.h2loadCPUPerPush), String(format: "%.2f", round.mockCPUPerPushUnderH2Load), String(format: "%.2f", round.rateRatio),
             String(format: "%.2f", round.alone.summary.p99), String(format: "%.2f", round.storm.summary.p99),
             String(format: "%.2f", round.isolationRatio), ReportNumbers.grouped(round.stormFanOutRate), String(round.leftWhenEventsEnded)]
        }
        return ScenarioResult(
            name: Self.name,
            description: "push-to-start to \(ReportNumbers.grouped(Double(options.tokens))) tokens at kickoff, alone and while \(options.matches) match channels broadcast; "
                + "h2load with the same payload, token paths and concurrency as the ceiling",
            parameters: [.init(name: "tokens", value: String(options.tokens)), .init(name: "rounds", value: String(options.rounds)),
                         .init(name: "match channels", value: String(options.matches)),
                         .init(name: "events per match per second", value: String(options.eventsPerMatchPerSecond)),
                         .init(name: "personal connections x streams", value: "\(connections) x \(inFlight / connections)"),
                         .init(name: "personal niceness", value: String(niceness)),
                         .init(name: "placement", value: placement.description)],
            durationSeconds: timeline.seconds,
            throughputs: [.init(name: "kickoff fan-out, no broadcasts", unit: "pushes/s", value: fanOut, ceilingRatio: fanOut / ceiling),
                          .init(name: "kickoff fan-out during the matches", unit: "pushes/s", value: stormRate, ceilingRatio: stormRate / ceiling),
                          .init(name: "h2load, same pushes", unit: "pushes/s", value: ceiling, ceilingRatio: 1),
                          .init(name: "token registration", unit: "tokens/s", value: Double(options.tokens) / registrationSeconds)],
            latencies: [.init(name: "broadcast ingest→APNs, matches alone", summary: alone.summary, note: "event sent → mock received the broadcast"),
                        .init(name: "broadcast ingest→APNs, during the storm", summary: storm.summary),
                        .init(name: "event sent → 202 (durable)", summary: LatencyHistogram(milliseconds: rounds.flatMap(\.acknowledged)).summary)],
            processes: rounds.last?.fanOutProcesses ?? [],
            tables: [.init(title: "Rounds (CPU in µs per push)", columns: ["round", "kickoff pushes/s", "gateway CPU", "h2load pushes/s", "h2load CPU",
                                                                         "mock CPU under h2load", "ratio", "p99 alone ms", "p99 storm ms",
                                                                         "p99 ratio", "storm pushes/s", "queued at the events' end"], rows: perRound),
                     timeline.phaseTable],
            series: timeline.series,
            checks: [.init(name: "kickoff fan-out / h2load", measured: rateRatio, target: options.rateTarget, comparison: .atLeast),
                     .init(name: "kickoff fan-out during the matches / h2load", measured: stormRateRatio, target: options.stormRateTarget,
                           comparison: .atLeast),
                     .init(name: "broadcast p99 during the storm / alone", measured: isolationRatio, target: options.isolationTarget,
                           comparison: .atMost),
                     .init(name: "every event broadcast, storm outlasting the events", measured: complete ? 1 : 0, target: 1, comparison: .atLeast)],
            notes: [String(format: "The checks take the median of the per-round ratios (each round against its own baseline); "
                           + "the ratios of the medians over the rounds are %.2f (fan-out) and %.2f (isolation).", fanOut / ceiling, stormP99 / aloneP99)]
                + (gatewayPeak.map { [String(format: "Gateway peak RSS %.1f MB.", Double($0) / 1e6)] } ?? []))
    }
}
