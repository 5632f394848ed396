import APNs
import Foundation
import LoadKit
import Measurements
import TouchlineCore
import TouchlineRuntime

/// `client-ceiling`: Touchline's APNs client and `h2load` against the same mock APNs process,
/// with the same bodies, headers, concurrency and unique device-token paths, back to back.
///
/// Rounds alternate (ours, h2load, ours, ...) so that machine noise hits both alike; the figure
/// that matters is the ratio of the medians, measured in one run. Held to issue 1's target:
/// at least 0.8 of h2load.
struct ClientCeiling {
    struct Options {
        var requests = 200_000
        var concurrency = 100
        var rounds = 5
        var bodyBytes = 300
        var mockThreads: Int?
        var target = 0.8
    }

    static let name = "client-ceiling"

    let options: Options
    let settings: LoadSettings

    func run() async throws -> ScenarioResult {
        let stage = try LoadStage(settings: settings, pinMock: true, mockThreads: options.mockThreads)
        let mock = stage.mock
        let configuration = APNsConfiguration(keyPath: stage.key.privateKeyFile, keyID: LoadIdentity.keyID, teamID: LoadIdentity.teamID,
                                              bundleID: LoadIdentity.bundleID,
                                              environment: .custom(pushHost: "127.0.0.1", pushPort: mock.pushPort,
                                                                   managementHost: "127.0.0.1", managementPort: mock.managementPort))
        let providerToken = try ProviderToken(configuration: configuration, clock: SystemClock())
        let loop = EventLoop.start(name: "load-client")
        defer { loop.stopAndWait() }
        let apns = try APNsConnections(configuration: configuration, providerToken: providerToken,
                                       options: .init(pushConnections: 1, managementConnections: 1,
                                                      maxQueuedRequests: options.requests + options.concurrency,
                                                      tls: TLSConfiguration(caFile: mock.caFile), pools: [.device]),
                                       loop: loop)
        let pushes = LoadStage.DevicePushes(tokens: (0..<options.requests).map { String(format: "%064x", $0 + 1) },
                                            payload: LoadPayloads.update(bytes: options.bodyBytes), priority: 5)
        let log = ScenarioLog(Self.name)
        log.say("\(options.requests) device pushes per round, 1 connection, \(options.concurrency) streams, \(pushes.payload.count)-byte bodies, "
                + "\(options.rounds) rounds; \(stage.placement.description)")

        var timeline = ScenarioTimeline()
        var ours: [Double] = [], theirs: [Double] = []
        var ourCPU: [Double] = [], theirCPU: [Double] = []
        var rows: [[String]] = []
        for round in 1...options.rounds {
            var phase = try PhaseMeasurement(stage: stage)
            let (seconds, failures) = await PushLoad.run(client: apns.client, tokens: pushes.tokens, payload: pushes.payload,
                                                         concurrency: options.concurrency)
            let figures = try phase.finish()
            timeline.add(figures, label: "touchline \(round)")
            guard failures.isEmpty else { throw LoadError("touchline client failures: \(failures)") }
            phase = try PhaseMeasurement(stage: stage)
            let reference = try stage.ceiling(pushes, connections: 1, streams: options.concurrency)
            timeline.add(try phase.finish(), label: "h2load \(round)")
            ours.append(Double(options.requests) / seconds)
            theirs.append(reference.requestsPerSecond)
            ourCPU.append(figures.cpuSeconds(of: "touchline-load") * 1e6 / Double(options.requests))
            theirCPU.append(reference.cpuSeconds * 1e6 / Double(options.requests))
            rows.append([String(round), ReportNumbers.grouped(ours.last!), String(format: "%.2f", ourCPU.last!), ReportNumbers.grouped(theirs.last!),
                         String(format: "%.2f", theirCPU.last!), String(format: "%.2f", ours.last! / theirs.last!)])
            log.say(String(format: "round %d: touchline %@ req/s, h2load %@ req/s", round, ReportNumbers.grouped(ours.last!), ReportNumbers.grouped(theirs.last!)))
        }
        await apns.shutdown()
        let ratio = median(ours) / median(theirs)
        return ScenarioResult(
            name: Self.name,
            description: "Touchline's APNs client versus h2load against the same mock: device pushes with unique token paths over one connection",
            parameters: [.init(name: "requests per round", value: String(options.requests)), .init(name: "streams", value: String(options.concurrency)),
                         .init(name: "rounds", value: String(options.rounds)), .init(name: "body bytes", value: String(pushes.payload.count)),
                         .init(name: "placement", value: stage.placement.description)],
            durationSeconds: timeline.seconds,
            throughputs: [.init(name: "Touchline APNs client", unit: "pushes/s", value: median(ours), ceilingRatio: ratio),
                          .init(name: "h2load", unit: "pushes/s", value: median(theirs), ceilingRatio: 1)],
            processes: [.init(name: "Touchline client (touchline-load)", cpuSeconds: median(ourCPU) * Double(options.requests) / 1e6,
                              cpuMicrosecondsPerOperation: median(ourCPU), peakRSSBytes: processPeakResidentBytes(pid: getpid())),
                        .init(name: "mock APNs", cpuSeconds: mock.cpuSeconds, peakRSSBytes: mock.peakResidentBytes)],
            tables: [.init(title: "Rounds", columns: ["round", "touchline req/s", "µs CPU/req", "h2load req/s", "µs CPU/req", "ratio"], rows: rows),
                     timeline.phaseTable],
            series: timeline.series,
            checks: [.init(name: "Touchline client / h2load", measured: ratio, target: options.target, comparison: .atLeast)])
    }
}
