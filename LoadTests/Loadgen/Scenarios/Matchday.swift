import Foundation
import LoadKit
import Measurements

/// `matchday`: N concurrent matches played in real time (``MatchdaySchedule``): what a busy
/// Saturday looks like to the gateway.
///
/// Measured: the events' ingest rate and the broadcasts the gateway made of them (coalescing per
/// channel), the priority mix and budget use, APNs answers by status, ingest→APNs latency per
/// priority (which includes the channels' pacing: a state may wait for its rate limit by
/// design), CPU and memory. Held to: every event acknowledged and every match ended at APNs,
/// no critical moment downgraded by the priority budget, and pushes never outnumbering events.
struct Matchday {
    struct Options {
        var schedule = MatchdayOptions()
        var connections = 16
    }

    static let name = "matchday"

    let options: Options
    let settings: LoadSettings

    func run() throws -> ScenarioResult {
        let schedule: MatchdaySchedule
        do { schedule = try MatchdaySchedule(options: options.schedule) } catch { throw LoadError("matchday: \(error)") }
        let stage = try LoadStage(settings: settings, pinMock: false)
        let gateway = try stage.startGateway(extraArguments: ["--metrics", #"{"maxChannelLabels": \#(schedule.matches.count + 100)}"#])
        let log = ScenarioLog(Self.name)
        log.say(String(format: "%d matches of %.0f s, %d events, over %d connections; %@", schedule.matches.count, options.schedule.matchSeconds,
                       schedule.events.count, options.connections, stage.placement.description))

        var timeline = ScenarioTimeline()
        let before = try Self.scrape(gateway)
        let phase = try PhaseMeasurement(stage: stage)
        let traffic = try MatchdayTraffic(schedule: schedule, connections: options.connections, connect: gateway.connector).run()
        // The last states wait for their channel's rate limit and the ends for APNs: wait
        // until every channel has ended (its end push delivered), at most 30 s.
        let ended = try Self.waitUntilEnded(schedule.matches.count, gateway: gateway)
        let figures = try phase.finish()
        timeline.add(figures, label: "match day")
        let metrics = try Self.scrape(gateway).since(before)
        log.say(String(format: "%d events in %.1f s, %d broadcasts; %d of %d channels ended", traffic.eventsSent.values.reduce(0, +),
                       traffic.seconds, figures.arrivals.arrivals(endpoint: "broadcast").total, ended, schedule.matches.count))

        let ceilingPhase = try PhaseMeasurement(stage: stage)
        let ceiling = try stage.standardCeiling()
        timeline.add(try ceilingPhase.finish(), label: "h2load ceiling")
        return result(schedule: schedule, traffic: traffic, figures: figures, metrics: metrics, ended: ended,
                      ceiling: ceiling.requestsPerSecond, timeline: timeline, placement: stage.placement)
    }

    private func result(schedule: MatchdaySchedule, traffic: MatchdayTraffic.Result, figures: PhaseFigures, metrics: PrometheusSnapshot,
                        ended: Int, ceiling: Double, timeline: ScenarioTimeline, placement: CPUPlacement) -> ScenarioResult {
        let events = traffic.eventsSent.values.reduce(0, +)
        let broadcasts = figures.arrivals.arrivals(endpoint: "broadcast").total
        let eventRate = Double(events) / traffic.seconds, pushRate = Double(broadcasts) / traffic.seconds
        let received = metrics.sum("touchline_events_received_total", by: "channel")
        let pushed = metrics.sum("touchline_pushes_sent_total", by: "channel")
        let perChannel = received.compactMap { channel, count in pushed[channel].flatMap { $0 > 0 ? count / $0 : nil } }.sorted()
        let byPriority = metrics.sum("touchline_pushes_sent_total", by: "priority")
        let downgrades = metrics.sum("touchline_budget_downgrades_total")
        let critical = schedule.importanceCounts[.critical] ?? 0
        let statuses = (figures.arrivals.endpoint("broadcast")?.statuses ?? [:]).sorted { $0.key < $1.key }
        let gatewayStatuses = metrics.sum("touchline_apns_responses_total", by: "status", matching: ["pool": "broadcast"]).sorted { $0.key < $1.key }
        let kinds = traffic.eventsSent.filter { $0.value > 0 }.sorted { $0.value > $1.value }
        func ratio(_ value: Double) -> String { String(format: "%.2f", value) }
        return ScenarioResult(
            name: Self.name,
            description: "\(schedule.matches.count) concurrent matches in real time: clock ticks every second, stats, goals, cards, "
                + "substitutions, half time, final whistle and end, as merge patches carrying their send time",
            parameters: [.init(name: "matches", value: String(schedule.matches.count)),
                         .init(name: "match length", value: String(format: "%.0f s (90 minutes compressed) + %.0f s half time",
                                                                   options.schedule.matchSeconds, options.schedule.halfTimeSeconds)),
                         .init(name: "connections", value: String(options.connections)), .init(name: "seed", value: String(options.schedule.seed)),
                         .init(name: "channel policy", value: options.schedule.policyJSON ?? "the gateway's default"),
                         .init(name: "placement", value: placement.description)],
            durationSeconds: timeline.seconds,
            throughputs: [.init(name: "events posted", unit: "events/s", value: eventRate, ceilingRatio: eventRate / ceiling),
                          .init(name: "broadcasts arrived", unit: "pushes/s", value: pushRate, ceilingRatio: pushRate / ceiling),
                          .init(name: "h2load ceiling (device pushes)", unit: "pushes/s", value: ceiling, ceilingRatio: 1)],
            latencies: [.init(name: "ingest→APNs, priority 10", summary: figures.arrivals.latency(endpoint: "broadcast", priority: 10).summary,
                              note: "critical moments: goals, red cards, final whistle"),
                        .init(name: "ingest→APNs, priority 5", summary: figures.arrivals.latency(endpoint: "broadcast", priority: 5).summary,
                              note: "includes waits for the channel's rate limit, by design"),
                        .init(name: "event sent → 202 (durable)", summary: LatencyHistogram(milliseconds: traffic.acknowledgedMilliseconds).summary),
                        .init(name: "send started late", summary: LatencyHistogram(milliseconds: traffic.latenessMilliseconds).summary,
                              note: "the load generator behind its schedule")],
            processes: figures.processRows(operations: events),
            tables: [
                .init(title: "Events by kind", columns: ["kind", "events"], rows: kinds.map { [$0.key.rawValue, String($0.value)] }),
                .init(title: "Coalescing (events per push, per channel)", columns: ["events", "pushes", "overall", "min", "median", "max"],
                      rows: [[ReportNumbers.grouped(Double(events)), ReportNumbers.grouped(Double(broadcasts)), ratio(Double(events) / Double(max(1, broadcasts))),
                              ratio(perChannel.first ?? 0), ratio(median(perChannel)), ratio(perChannel.last ?? 0)]]),
                .init(title: "Priority mix and budget", columns: ["critical events", "priority-10 pushes", "priority-5 pushes", "budget downgrades"],
                      rows: [[String(critical), ReportNumbers.grouped(byPriority["10"] ?? 0), ReportNumbers.grouped(byPriority["5"] ?? 0), ReportNumbers.grouped(downgrades)]]),
                .init(title: "APNs answers to broadcasts", columns: ["status", "at the mock", "counted by the gateway"],
                      rows: Set(statuses.map(\.key) + gatewayStatuses.map(\.key)).sorted().map { status in
                          [status, String(figures.arrivals.endpoint("broadcast")?.statuses[status] ?? 0),
                           ReportNumbers.grouped(gatewayStatuses.first { $0.key == status }?.value ?? 0)]
                      }),
                timeline.phaseTable,
            ],
            // Priority 10 apart, so the critical moments show in the chart.
            series: timeline.series + [figures.arrivalRate("broadcast", priority: 10, name: "priority-10 broadcasts")],
            checks: [.init(name: "matches ended at APNs", measured: Double(ended) / Double(schedule.matches.count), target: 1, comparison: .atLeast),
                     .init(name: "critical moments downgraded by the budget", measured: downgrades, target: 0, comparison: .atMost),
                     .init(name: "events per push (coalescing)", measured: Double(events) / Double(max(1, broadcasts)), target: 1,
                           comparison: .atLeast)],
            notes: [String(format: "%d channels created in %.2f s before the schedule started; %d ends acknowledged.",
                           schedule.matches.count, traffic.createSeconds, traffic.endsSent),
                    "Events are generic merge patches shaped like the match state, so that each can carry its send time (`sentAt`) "
                    + "for the ingest→APNs latency; sports events exercise the same path after their reducer."])
    }

    /// The gateway's `/metrics`, over a connection of its own (the gateway closes keep-alive
    /// connections left idle as long as a match day).
    private static func scrape(_ gateway: GatewayTarget) throws -> PrometheusSnapshot {
        let response = try gateway.connect().send("GET", "/metrics")
        guard response.status == 200 else { throw LoadError("GET /metrics answered \(response.status): \(response.text.prefix(200))") }
        do { return try PrometheusSnapshot(parsing: response.text) } catch { throw LoadError("\(error)") }
    }

    /// Polls `touchline_channels{status="ended"}` until `count` channels ended or 30 s passed.
    private static func waitUntilEnded(_ count: Int, gateway: GatewayTarget) throws -> Int {
        let deadline = monotonicNanoseconds() + 30_000_000_000
        while true {
            let ended = Int(try scrape(gateway).sum("touchline_channels", matching: ["status": "ended"]))
            if ended >= count || monotonicNanoseconds() > deadline { return ended }
            Thread.sleep(forTimeInterval: 0.25)
        }
    }
}
