import Foundation
import LoadKit
import Measurements

/// `matchday`: N concurrent matches played in real time (``MatchdaySchedule``): what a busy
/// Saturday looks like to the gateway, played twice on the same gateway in the same run: first
/// on channels with uniform pacing (every change waits for the shared bucket: the pacing before
/// importance-aware pacing, the baseline), then on channels with the gateway's default policy.
/// The same seed gives both arms the same schedule, event for event.
///
/// Measured per arm: the broadcasts made of the events (coalescing per channel), the priority mix
/// and budget use, APNs answers by status, ingest→APNs latency per priority (which includes the
/// channels' pacing: a state may wait for its rate limit by design), CPU and memory. Held to:
/// every event acknowledged and every match ended at APNs with its final state, no critical
/// moment downgraded by the priority budget, priority-10 ingest→APNs p99 of the default policy at
/// most 50 ms, and at least 2× fewer pushes than the baseline.
struct Matchday {
    struct Options {
        var schedule = MatchdayOptions()
        var connections = 16
        /// Priority-10 ingest→APNs p99 the default policy is held to.
        var criticalP99Milliseconds = 50.0
        /// Baseline pushes divided by default-policy pushes, at least.
        var pushReduction = 2.0
    }

    static let name = "matchday"
    /// The baseline arm's policy: no critical reserve, low changes paced like normal ones.
    static let uniformPolicyJSON = #"{"criticalBurst": 0, "lowImportanceIntervalSeconds": 0}"#

    let options: Options
    let settings: LoadSettings

    /// One play of the schedule and what it gave.
    struct Arm {
        var label: String
        var policy: String
        var schedule: MatchdaySchedule
        var traffic: MatchdayTraffic.Result
        var figures: PhaseFigures
        var metrics: PrometheusSnapshot
        var ended: Int

        var events: Int { traffic.eventsSent.values.reduce(0, +) }
        var broadcasts: Int { figures.arrivals.arrivals(endpoint: "broadcast").total }
        var byPriority: [String: Double] { metrics.sum("touchline_pushes_sent_total", by: "priority") }
        var downgrades: Double { metrics.sum("touchline_budget_downgrades_total") }
        func latency(priority: Int) -> LatencySummary { figures.arrivals.latency(endpoint: "broadcast", priority: priority).summary }
    }

    func run() throws -> ScenarioResult {
        var uniform = options.schedule
        (uniform.channelPrefix, uniform.policyJSON) = ("base-", Self.uniformPolicyJSON)
        let schedules: [(label: String, schedule: MatchdaySchedule)]
        do {
            schedules = [("uniform pacing (baseline)", try MatchdaySchedule(options: uniform)),
                         ("default policy", try MatchdaySchedule(options: options.schedule))]
        } catch { throw LoadError("matchday: \(error)") }
        let matches = options.schedule.matches
        let stage = try LoadStage(settings: settings, pinMock: false)
        let gateway = try stage.startGateway(extraArguments: ["--metrics", #"{"maxChannelLabels": \#(2 * matches + 100)}"#])
        let log = ScenarioLog(Self.name)
        log.say(String(format: "%d matches of %.0f s, %d events, over %d connections, twice (baseline, then default policy); %@",
                       matches, options.schedule.matchSeconds, schedules[0].schedule.events.count, options.connections,
                       stage.placement.description))

        var timeline = ScenarioTimeline()
        var arms: [Arm] = []
        for (label, schedule) in schedules {
            LoadProgress.shared.phase(label, expectedSeconds: Double(schedule.matches.map(\.endOffsetNanoseconds).max() ?? 0) / 1e9,
                                      matches: schedule.matches.count)
            let before = try gateway.metrics()
            let phase = try PhaseMeasurement(stage: stage)
            let traffic = try MatchdayTraffic(schedule: schedule, connections: options.connections, connect: gateway.connector).run()
            // The last states wait for their channel's rate limit and the ends for APNs: wait
            // until every channel of this arm has ended (its end push delivered), at most 30 s.
            let ended = try Self.waitUntilEnded(matches, since: before, gateway: gateway)
            let figures = try phase.finish()
            timeline.add(figures, label: label)
            let arm = Arm(label: label, policy: schedule.options.policyJSON ?? "the gateway's default", schedule: schedule,
                          traffic: traffic, figures: figures, metrics: try gateway.metrics().since(before), ended: ended)
            log.say(String(format: "%@: %d events in %.1f s, %d broadcasts, priority-10 p99 %.1f ms; %d of %d channels ended", label,
                           arm.events, traffic.seconds, arm.broadcasts, arm.latency(priority: 10).p99, ended, matches))
            arms.append(arm)
        }

        LoadProgress.shared.phase("h2load ceiling")
        let ceilingPhase = try PhaseMeasurement(stage: stage)
        let ceiling = try stage.standardCeiling()
        timeline.add(try ceilingPhase.finish(), label: "h2load ceiling")
        return result(baseline: arms[0], paced: arms[1], ceiling: ceiling.requestsPerSecond, timeline: timeline, placement: stage.placement)
    }

    private func result(baseline: Arm, paced: Arm, ceiling: Double, timeline: ScenarioTimeline, placement: CPUPlacement) -> ScenarioResult {
        let arms = [baseline, paced]
        func ratio(_ value: Double) -> String { String(format: "%.2f", value) }
        func perChannel(_ arm: Arm) -> [Double] {
            let received = arm.metrics.sum("touchline_events_received_total", by: "channel")
            let pushed = arm.metrics.sum("touchline_pushes_sent_total", by: "channel")
            return received.compactMap { channel, count in pushed[channel].flatMap { $0 > 0 ? count / $0 : nil } }.sorted()
        }
        let statuses = arms.map { $0.figures.arrivals.endpoint("broadcast")?.statuses ?? [:] }
        let gatewayStatuses = arms.map { $0.metrics.sum("touchline_apns_responses_total", by: "status", matching: ["pool": "broadcast"]) }
        let critical = paced.schedule.importanceCounts[.critical] ?? 0
        let kinds = paced.traffic.eventsSent.filter { $0.value > 0 }.sorted { $0.value > $1.value }
        let reduction = Double(baseline.broadcasts) / Double(max(1, paced.broadcasts))
        var throughputs: [ScenarioResult.Throughput] = []
        var latencies: [ScenarioResult.Latency] = []
        for arm in arms {
            let eventRate = Double(arm.events) / arm.traffic.seconds, pushRate = Double(arm.broadcasts) / arm.traffic.seconds
            throughputs += [.init(name: "events posted, \(arm.label)", unit: "events/s", value: eventRate, ceilingRatio: eventRate / ceiling),
                            .init(name: "broadcasts arrived, \(arm.label)", unit: "pushes/s", value: pushRate, ceilingRatio: pushRate / ceiling)]
            latencies += [.init(name: "ingest→APNs, priority 10, \(arm.label)", summary: arm.latency(priority: 10),
                                note: "critical moments: goals, red cards, final whistle"),
                          .init(name: "ingest→APNs, priority 5, \(arm.label)", summary: arm.latency(priority: 5),
                                note: "includes waits for the pace and the low-importance cadence, by design"),
                          .init(name: "event sent → 202 (durable), \(arm.label)",
                                summary: LatencyHistogram(milliseconds: arm.traffic.acknowledgedMilliseconds).summary),
                          .init(name: "send started late, \(arm.label)", summary: LatencyHistogram(milliseconds: arm.traffic.latenessMilliseconds).summary,
                                note: "the load generator behind its schedule")]
        }
        throughputs.append(.init(name: "h2load ceiling (device pushes)", unit: "pushes/s", value: ceiling, ceilingRatio: 1))
        return ScenarioResult(
            name: Self.name,
            description: "\(paced.schedule.matches.count) concurrent matches in real time, played twice on the same gateway: uniform pacing "
                + "(baseline), then the default policy; clock ticks every second, stats, goals, cards, substitutions, half time, final "
                + "whistle and end, as merge patches carrying their send time",
            parameters: [.init(name: "matches", value: String(paced.schedule.matches.count)),
                         .init(name: "match length", value: String(format: "%.0f s (90 minutes compressed) + %.0f s half time",
                                                                   options.schedule.matchSeconds, options.schedule.halfTimeSeconds)),
                         .init(name: "connections", value: String(options.connections)), .init(name: "seed", value: String(options.schedule.seed)),
                         .init(name: "baseline policy", value: baseline.policy), .init(name: "policy", value: paced.policy),
                         .init(name: "placement", value: placement.description)],
            durationSeconds: timeline.seconds,
            throughputs: throughputs,
            latencies: latencies,
            processes: paced.figures.processRows(operations: paced.events),
            tables: [
                .init(title: "Events by kind (each arm)", columns: ["kind", "events"], rows: kinds.map { [$0.key.rawValue, String($0.value)] }),
                .init(title: "Coalescing (events per push, per channel)", columns: ["arm", "events", "pushes", "overall", "min", "median", "max"],
                      rows: arms.map { arm in
                          let spread = perChannel(arm)
                          return [arm.label, ReportNumbers.grouped(Double(arm.events)), ReportNumbers.grouped(Double(arm.broadcasts)),
                                  ratio(Double(arm.events) / Double(max(1, arm.broadcasts))), ratio(spread.first ?? 0), ratio(median(spread)),
                                  ratio(spread.last ?? 0)]
                      }),
                .init(title: "Priority mix and budget", columns: ["arm", "critical events", "priority-10 pushes", "priority-5 pushes",
                                                                   "budget downgrades"],
                      rows: arms.map { arm in
                          [arm.label, String(critical), ReportNumbers.grouped(arm.byPriority["10"] ?? 0), ReportNumbers.grouped(arm.byPriority["5"] ?? 0),
                           ReportNumbers.grouped(arm.downgrades)]
                      }),
                .init(title: "APNs answers to broadcasts", columns: ["status"] + arms.flatMap { ["\($0.label) at the mock", "counted by the gateway"] },
                      rows: Set(statuses.flatMap(\.keys) + gatewayStatuses.flatMap(\.keys)).sorted().map { status in
                          [status] + arms.indices.flatMap { index in
                              [String(statuses[index][status] ?? 0), ReportNumbers.grouped(gatewayStatuses[index][status] ?? 0)]
                          }
                      }),
                timeline.phaseTable,
            ],
            // Priority 10 apart, so the critical moments show in the chart.
            series: timeline.series + [paced.figures.arrivalRate("broadcast", priority: 10, name: "priority-10 broadcasts, default policy")],
            checks: arms.flatMap { arm in
                [ScenarioResult.Check(name: "matches ended at APNs with their final state, \(arm.label)",
                                      measured: Double(arm.ended) / Double(arm.schedule.matches.count), target: 1, comparison: .atLeast),
                 .init(name: "critical moments downgraded by the budget, \(arm.label)", measured: arm.downgrades, target: 0, comparison: .atMost)]
            } + [
                .init(name: "ingest→APNs p99, priority 10, default policy", measured: paced.latency(priority: 10).p99,
                      target: options.criticalP99Milliseconds, comparison: .atMost, unit: "ms"),
                .init(name: "pushes, baseline / default policy", measured: reduction, target: options.pushReduction, comparison: .atLeast),
                .init(name: "events per push (coalescing), default policy", measured: Double(paced.events) / Double(max(1, paced.broadcasts)),
                      target: 1, comparison: .atLeast),
            ],
            notes: arms.map { arm in
                String(format: "%@: %d channels created in %.2f s before the schedule started; %d ends acknowledged.", arm.label,
                       arm.schedule.matches.count, arm.traffic.createSeconds, arm.traffic.endsSent)
            } + ["Events are generic merge patches shaped like the match state, so that each can carry its send time (`sentAt`) "
                 + "for the ingest→APNs latency; sports events exercise the same path after their reducer.",
                 "A match ends with its final state: the end push carries the newest state (channel-engine rule 11), so a channel "
                 + "counted as ended at APNs delivered its final state."])
    }

    /// The gateway's `/metrics`, over a connection of its own (the gateway closes keep-alive
    /// connections left idle as long as a match day).
    /// Polls `touchline_channels` until `count` more channels are ended or closed than in
    /// `before`, or 30 s passed; returns how many did.
    private static func waitUntilEnded(_ count: Int, since before: PrometheusSnapshot, gateway: GatewayTarget) throws -> Int {
        func finished(_ metrics: PrometheusSnapshot) -> Int {
            Int(metrics.sum("touchline_channels", matching: ["status": "ended"]) + metrics.sum("touchline_channels", matching: ["status": "closed"]))
        }
        let deadline = monotonicNanoseconds() + 30_000_000_000
        while true {
            let ended = finished(try gateway.metrics()) - finished(before)
            if ended >= count || monotonicNanoseconds() > deadline { return ended }
            Thread.sleep(forTimeInterval: 0.25)
        }
    }
}
