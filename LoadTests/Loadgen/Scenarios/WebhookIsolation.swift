import Foundation
import LoadKit
import Measurements

/// `webhook-isolation`: the same broadcast load three times per round, each on a fresh gateway
/// process over the same data: without webhooks, with one endpoint whose receiver accepts and
/// never answers, and with one whose receiver answers 500. Throughout each phase channels are
/// created and deleted (a `channel.deleted` event each), so the webhook loop always has
/// deliveries that stall or fail and retry. Checked: the broadcasts' ingest→APNs p99 with each
/// bad receiver / without webhooks ≤ 1.5 (issue 12: deliveries never delay a broadcast).
struct WebhookIsolation {
    struct Options {
        var rounds = 2
        var matches = 200
        var eventsPerMatchPerSecond = 2.0
        var seconds = 10.0
        var churnPerSecond = 10.0
        var connections = 8
        var isolationTarget = 1.5
    }

    static let name = "webhook-isolation"

    let options: Options
    let settings: LoadSettings

    /// What one phase runs against.
    enum Receiver: CaseIterable {
        case none, stalled, failing

        var label: String {
            switch self {
            case .none: "no webhooks"
            case .stalled: "receiver never answers"
            case .failing: "receiver answers 500"
            }
        }
    }

    func run() throws -> ScenarioResult {
        let stage = try LoadStage(settings: settings, pinMock: true)
        let log = ScenarioLog(Self.name)
        let matchIDs = (0..<options.matches).map { String(format: "hook-match-%04d", $0) }
        var timeline = ScenarioTimeline()
        var latencies: [Receiver: [LatencyHistogram]] = [:]
        /// Connections each bad receiver took per round: the proof that deliveries were under way.
        var reached: [Receiver: [Int]] = [:]
        var complete = true
        var phaseNumber = 0
        for round in 1...options.rounds {
            for receiver in Receiver.allCases {
                phaseNumber += 1
                let sink = try receiver == .none ? nil : WebhookSink(receiver == .stalled ? .stall : .answer(status: 500))
                defer { sink?.stop() }
                stage.gatewayProcess?.stop()
                let gateway = try stage.startGateway(extraArguments: sink.map { ["--webhooks", Self.webhooks(url: $0.url, name: "sink-\(phaseNumber)")] } ?? [])
                if phaseNumber == 1 { try ChannelCreation.create(matchIDs, policy: ChannelCreation.unthrottledPolicy, connect: gateway.connector) }
                let pacer = PacedEvents(channels: matchIDs, connections: options.connections,
                                        eventsPerChannelPerSecond: options.eventsPerMatchPerSecond, firstSeq: phaseNumber * 1_000_000)
                let stop = StopFlag()
                let churn = Thread { [options, phaseNumber] in
                    guard let client = try? gateway.connect() else { return }
                    var n = 0
                    let interval = Int64(1e9 / options.churnPerSecond)
                    var due = monotonicNanoseconds()
                    while !stop.isSet {
                        let id = "churn-\(phaseNumber)-\(n)"
                        n += 1
                        _ = try? client.send("POST", "/v1/channels", body: Array(#"{"id":"\#(id)","storagePolicy":"no-storage"}"#.utf8))
                        _ = try? client.send("DELETE", "/v1/channels/\(id)")
                        due += interval
                        sleep(untilMonotonic: due)
                    }
                }
                churn.start()
                // Let the bad receiver fill the endpoint's connections before measuring.
                Thread.sleep(forTimeInterval: 1)
                let phase = try PhaseMeasurement(stage: stage)
                let timings = try pacer.run(seconds: options.seconds, connect: gateway.connector)
                Thread.sleep(forTimeInterval: 0.5)
                stop.set()
                let figures = try phase.finish()
                timeline.add(figures, label: "\(receiver.label) \(round)")
                let broadcasts = figures.arrivals.latency(endpoint: "broadcast")
                complete = complete && broadcasts.count == timings.count
                latencies[receiver, default: []].append(broadcasts)
                reached[receiver, default: []].append(sink?.connections ?? 0)
                log.say(String(format: "round %d, %@: broadcast p99 %.2f ms (%d broadcasts); %d connections to the receiver", round, receiver.label,
                               broadcasts.summary.p99, broadcasts.count, sink?.connections ?? 0))
            }
        }
        stage.gatewayProcess?.stop()
        return result(latencies, reached: reached, complete: complete, timeline: timeline, placement: stage.placement)
    }

    /// One endpoint for every event type, with the default retry, timeout and concurrency.
    static func webhooks(url: String, name: String) -> String {
        #"{"endpoints": [{"name": "\#(name)", "url": "\#(url)", "secret": "load-secret-0123456789", "events": ["*"]}]}"#
    }

    private func result(_ latencies: [Receiver: [LatencyHistogram]], reached: [Receiver: [Int]], complete: Bool, timeline: ScenarioTimeline,
                        placement: CPUPlacement) -> ScenarioResult {
        let baseline = latencies[.none] ?? []
        // Each bad-receiver phase against the baseline of its own round, then the median.
        func ratios(_ receiver: Receiver) -> [Double] {
            zip(latencies[receiver] ?? [], baseline).map { $0.summary.p99 / $1.summary.p99 }
        }
        func merged(_ receiver: Receiver) -> LatencyHistogram {
            var all = LatencyHistogram()
            for histogram in latencies[receiver] ?? [] { all.merge(histogram) }
            return all
        }
        let rows = (0..<options.rounds).map { index in
            [String(index + 1)] + Receiver.allCases.map { String(format: "%.2f", latencies[$0]?[index].summary.p99 ?? 0) }
                + [String(format: "%.2f", ratios(.stalled)[index]), String(format: "%.2f", ratios(.failing)[index]),
                   String(reached[.stalled]?[index] ?? 0), String(reached[.failing]?[index] ?? 0)]
        }
        return ScenarioResult(
            name: Self.name,
            description: "\(options.matches) channels broadcasting at \(options.eventsPerMatchPerSecond)/s each, with \(options.churnPerSecond) channel create+delete/s "
                + "(a webhook event each): without webhooks, with a receiver that never answers, with one that answers 500",
            parameters: [.init(name: "rounds", value: String(options.rounds)), .init(name: "match channels", value: String(options.matches)),
                         .init(name: "events per match per second", value: String(options.eventsPerMatchPerSecond)),
                         .init(name: "seconds per phase", value: String(options.seconds)),
                         .init(name: "channel create+delete per second", value: String(options.churnPerSecond)),
                         .init(name: "placement", value: placement.description)],
            durationSeconds: timeline.seconds,
            latencies: Receiver.allCases.map { .init(name: "broadcast ingest→APNs, \($0.label)", summary: merged($0).summary) },
            tables: [.init(title: "Rounds (broadcast ingest→APNs p99, ms)",
                           columns: ["round"] + Receiver.allCases.map(\.label) + ["never answers / none", "500 / none",
                                                                              "connections to the silent receiver", "connections to the 500 receiver"], rows: rows),
                     timeline.phaseTable],
            series: timeline.series,
            checks: [.init(name: "broadcast p99, receiver never answers / no webhooks", measured: median(ratios(.stalled)),
                           target: options.isolationTarget, comparison: .atMost),
                     .init(name: "broadcast p99, receiver answers 500 / no webhooks", measured: median(ratios(.failing)),
                           target: options.isolationTarget, comparison: .atMost),
                     .init(name: "every event broadcast", measured: complete ? 1 : 0, target: 1, comparison: .atLeast)],
            notes: ["Each phase runs on a fresh gateway process over the same data directory; each bad receiver is compared with the "
                    + "no-webhook phase of its own round, and the checks take the median over the rounds."])
    }
}
