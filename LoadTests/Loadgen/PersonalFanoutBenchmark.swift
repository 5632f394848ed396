import APNs
import Foundation
import MockAPNs
import Touchline
import TouchlineCore

/// `personal-fanout`: the gateway (`touchline serve`) and the mock APNs (`touchline-mock-apns`)
/// as processes of their own, TLS on loopback.
///
/// Two figures, each a ratio measured in the same run:
/// - fan-out rate: one push-to-start job to N tokens following a topic (`POST /v1/personal`,
///   polled until done) against `h2load` sending the same payload bytes to the same N token paths
///   with the same concurrency as the gateway's personal pool, rounds alternating;
/// - isolation: the ingest→APNs p99 of paced broadcast events while such a backlog drains against
///   the same p99 with no backlog, timed from the load generator's clock to the mock's arrival.
struct PersonalFanoutBenchmark {
    struct Options {
        var tokens = 1_000_000
        var rounds = 3
        var isolationRounds = 2
        var registrationBatch = 5_000
        var channels = 100
        var eventsPerChannelPerSecond = 2.0
        var latencyConnections = 8
        var mockThreads = ProcessInfo.processInfo.activeProcessorCount
        var rateTarget = 0.7
        var isolationTarget = 1.5
        var check = false
        var personalConnections: Int?
        var personalInFlight: Int?
    }

    /// The personal queue's concurrency, the gateway's defaults unless set: its pool's push
    /// connections and the sends in flight. The gateway is started with exactly these, and h2load
    /// gets the same: that many connections, the streams split between them.
    var connections: Int { options.personalConnections ?? PersonalQueueSettings().connections }
    var inFlight: Int { options.personalInFlight ?? PersonalQueueSettings().maxInFlight }
    /// The personal loop's CPU priority; h2load runs at the same, so both clients meet the mock
    /// (at normal priority) on equal terms.
    var niceness: Int { PersonalQueueSettings().niceness }
    static let follow = "team:BENCH"

    let options: Options

    func run() throws -> Bool {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try MockAPNsProviderKeyFiles.generate(keyID: LoadIdentity.keyID, in: directory)
        let mock = try MockProcess(directory: directory, key: key, threads: options.mockThreads,
                                   extraArguments: ["--arrival-latency", "sentAt"])
        defer { mock.stop() }
        let adminKey = GatewayProcess.randomAdminKey()
        let gateway = try GatewayProcess(directory: directory, adminKey: adminKey, key: key, host: "127.0.0.1", pushPort: mock.pushPort,
                                         managementPort: mock.managementPort, caFile: mock.caFile,
                                         extraArguments: ["--personal-queue",
                                                          #"{"connections": \#(connections), "maxInFlight": \#(inFlight), "niceness": \#(niceness)}"#])
        defer { gateway.stop() }
        let port = gateway.port
        let connect: @Sendable () throws -> HTTPLoadClient = { try HTTPLoadClient(host: "127.0.0.1", port: port, apiKey: adminKey) }
        let api = try connect()
        let job = PersonalJobRequest()
        report("personal-fanout: gateway (touchline serve) and mock APNs (\(options.mockThreads) thread(s)) as separate processes, "
              + "TLS on loopback; \(options.tokens) push-to-start tokens following \(Self.follow); \(job.payload.count)-byte payload; "
              + "\(connections) connections x \(inFlight / connections) streams at niceness \(niceness) (the personal queue as configured)")

        let tokens = (0..<options.tokens).map { String(format: "%064x", $0 + 1) }
        let registration = try TokenRegistration(batchSize: options.registrationBatch).register(tokens, follow: Self.follow, connect: connect)
        report(String(format: "setup: %d tokens registered in %.1f s (%.0f tokens/s, POST /v1/tokens/batch of %d)",
                     tokens.count, registration, Double(tokens.count) / registration, options.registrationBatch))

        let fanOut = try compareWithH2Load(job: job, tokens: tokens, api: api, mock: mock, gateway: gateway, directory: directory, key: key)
        let isolation = try measureIsolation(job: job, expected: tokens.count, drainSeconds: fanOut.medianSeconds, api: api, connect: connect, mock: mock)
        report(String(format: "peak RSS: gateway %.1f MB, mock %.1f MB", Double(gateway.peakResidentBytes) / 1e6, Double(mock.peakResidentBytes) / 1e6))
        let passed = fanOut.ratio >= options.rateTarget && isolation.ratio <= options.isolationTarget && isolation.complete
        return !options.check || passed
    }

    // MARK: Fan-out rate

    private struct FanOutResult {
        var ratio: Double
        var medianSeconds: Double
    }

    private func compareWithH2Load(job: PersonalJobRequest, tokens: [String], api: HTTPLoadClient, mock: MockProcess,
                                   gateway: GatewayProcess, directory: String,
                                   key: MockAPNsProviderKeyFiles.Files) throws -> FanOutResult {
        let uriFile = directory + "/uris.txt"
        let bodyFile = directory + "/body.json"
        try tokens.map { "https://127.0.0.1:\(mock.pushPort)/3/device/\($0)" }.joined(separator: "\n")
            .write(toFile: uriFile, atomically: true, encoding: .utf8)
        try Data(job.payload).write(to: URL(fileURLWithPath: bodyFile))
        let signer = APNsConfiguration(keyPath: key.privateKeyFile, keyID: LoadIdentity.keyID, teamID: LoadIdentity.teamID,
                                       bundleID: LoadIdentity.bundleID,
                                       environment: .custom(pushHost: "127.0.0.1", pushPort: mock.pushPort,
                                                            managementHost: "127.0.0.1", managementPort: mock.managementPort))
        // The headers the gateway sends for a job with the default priority and no expiration.
        let headers = [("authorization", try ProviderToken(configuration: signer, clock: SystemClock()).current()),
                       ("apns-push-type", "liveactivity"), ("apns-topic", LoadIdentity.bundleID + ".push-type.liveactivity"),
                       ("content-type", "application/json"), ("apns-priority", "10")]

        report("round  gateway pushes/s  (µs CPU per push: gateway / mock)   h2load req/s  (µs CPU per push: h2load / mock)   ratio")
        var ours: [Double] = []
        var theirs: [Double] = []
        var seconds: [Double] = []
        for round in 1...options.rounds {
            let (gatewayBefore, mockBefore) = (gateway.cpuSeconds, mock.cpuSeconds)
            let result = try job.run(api: api, expected: tokens.count)
            let (gatewayMiddle, mockMiddle) = (gateway.cpuSeconds, mock.cpuSeconds)
            let reference = try H2Load.run(requests: tokens.count, concurrency: inFlight / connections,
                                           connections: connections, uriFile: uriFile, bodyFile: bodyFile, headers: headers, niceness: niceness)
            guard reference.succeeded == tokens.count else {
                throw LoadError("h2load got \(reference.succeeded) of \(tokens.count) 2xx answers")
            }
            let rate = Double(result.sent) / result.seconds
            ours.append(rate)
            theirs.append(reference.requestsPerSecond)
            seconds.append(result.seconds)
            let perPush = { (cpu: Double) in String(format: "%.2f", cpu * 1e6 / Double(tokens.count)) }
            report(String(format: "%5d  %16.0f  (%@ / %@)   %12.0f  (%@ / %@)   %.2f", round, rate, perPush(gatewayMiddle - gatewayBefore),
                          perPush(mockMiddle - mockBefore), reference.requestsPerSecond, perPush(reference.cpuSeconds),
                          perPush(mock.cpuSeconds - mockMiddle), rate / reference.requestsPerSecond))
        }
        let ratio = median(ours) / median(theirs)
        let pairedRatio = median(zip(ours, theirs).map { $0 / $1 })
        report(String(format: "fan-out: median gateway %.0f pushes/s, h2load %.0f req/s: ratio %.2f (target >= %.2f); "
                      + "median of the per-round ratios %.2f", median(ours), median(theirs), ratio, options.rateTarget, pairedRatio))
        return FanOutResult(ratio: ratio, medianSeconds: median(seconds))
    }

    // MARK: Isolation

    private struct IsolationResult {
        var ratio: Double
        /// Every paced event reached the mock as a broadcast in both phases, and the backlog
        /// was still draining when the second phase's events ended.
        var complete: Bool
    }

    /// Paced broadcast events for about as long as a backlog takes to drain, first alone, then
    /// right after a personal job was posted, `isolationRounds` times. Each phase has channels of
    /// its own (fresh `seq`s).
    private func measureIsolation(job: PersonalJobRequest, expected: Int, drainSeconds: Double, api: HTTPLoadClient,
                                  connect: @escaping @Sendable () throws -> HTTPLoadClient, mock: MockProcess) throws -> IsolationResult {
        let rounds = (1...options.isolationRounds).map { round in
            ["alone", "backlog"].map { phase in (0..<options.channels).map { String(format: "iso\(round)-\(phase)-%04d", $0) } }
        }
        for id in rounds.joined().joined() {
            let body = #"{"id":"\#(id)","storagePolicy":"no-storage","policy":\#(IngestBenchmark.unthrottledPolicy)}"#
            let response = try api.send("POST", "/v1/channels", body: Array(body.utf8))
            guard response.status == 201 else { throw LoadError("creating channel \(id) answered \(response.status): \(response.text)") }
        }
        // Leave room for the job's start and end: the events must all fall inside the drain.
        let seconds = max(2, drainSeconds * 0.6)
        report(String(format: "isolation: %d channels x %.0f events/s = %.0f broadcasts/s for %.1f s, %d connections, %d round(s); "
                     + "ingest→APNs from the event's send to the mock's arrival", options.channels, options.eventsPerChannelPerSecond,
                     Double(options.channels) * options.eventsPerChannelPerSecond, seconds, options.latencyConnections, rounds.count))
        _ = try mock.takeArrivalReport()
        var p99s: [[Double]] = [[], []]
        var complete = true
        for phases in rounds {
            for (index, channels) in phases.enumerated() {
                let pacer = PacedEvents(channels: channels, connections: options.latencyConnections,
                                        eventsPerChannelPerSecond: options.eventsPerChannelPerSecond)
                let backlog = index == 1 ? try job.start(api: api) : nil
                let timings = try pacer.run(seconds: seconds, connect: connect)
                var note = "no personal job"
                if let backlog {
                    let left = expected - (try job.progress(of: backlog, api: api)).sent
                    if left == 0 { complete = false }
                    let drained = try job.wait(for: backlog, api: api, expected: expected)
                    note = String(format: "%d pushes of the backlog still queued when the events ended; the job took %.1f s, %.0f pushes/s",
                                  left, drained.seconds, Double(drained.sent) / drained.seconds)
                    if left == 0 { note += "; it drained too early: raise --tokens" }
                }
                Thread.sleep(forTimeInterval: 1)
                let arrived = try mock.takeArrivalReport().latency(endpoint: "broadcast").summary
                guard arrived.count > 0 else { throw LoadError("the mock measured no broadcast") }
                if arrived.count != timings.count { complete = false }
                p99s[index].append(arrived.p99)
                let acknowledged = Percentiles(timings.map(\.acknowledged))
                report(String(format: "  %@: %d events sent, %d broadcasts arrived: p50 %.2f ms, p99 %.2f ms, max %.2f ms; "
                              + "send → 202 p50 %.2f ms, p99 %.2f ms; sends late p99 %.2f ms (%@)",
                              index == 0 ? "alone  " : "backlog", timings.count, arrived.count, arrived.p50, arrived.p99, arrived.max,
                              acknowledged.p50, acknowledged.p99, Percentiles(timings.map(\.late)).p99, note))
            }
        }
        let ratio = median(p99s[1]) / median(p99s[0])
        report(String(format: "isolation: median p99 with the backlog %.2f ms / alone %.2f ms = %.2f (target <= %.2f); per round %@",
                      median(p99s[1]), median(p99s[0]), ratio, options.isolationTarget,
                      zip(p99s[1], p99s[0]).map { String(format: "%.2f", $0 / $1) }.joined(separator: ", ")))
        return IsolationResult(ratio: ratio, complete: complete)
    }
}

/// Prints a line at once, even into a pipe or file, so progress shows during a long run.
private func report(_ line: String) {
    print(line)
    fflush(nil)
}
