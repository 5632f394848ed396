import APNs
import Foundation
import LoadKit
import MockAPNs
import TouchlineCore
import TouchlineRuntime

/// `client-ceiling`: Touchline's APNs client and `h2load` against the same mock APNs process,
/// with the same bodies, headers, concurrency and unique device-token paths, back to back.
///
/// Rounds alternate (ours, h2load, ours, ...) so that machine noise hits both alike; the
/// figure that matters is the ratio of the medians, measured in one run.
struct ClientCeiling {
    struct Options {
        var requests = 200_000
        var concurrency = 100
        var rounds = 5
        var bodyBytes = 300
        var mockThreads = 1
        /// Exit non-zero when the ratio is below this.
        var target = 0.8
        var check = false
    }


    let options: Options

    func run() async throws -> Bool {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try MockAPNsProviderKeyFiles.generate(keyID: LoadIdentity.keyID, in: directory)
        let mock = try MockProcess(directory: directory, key: key, threads: options.mockThreads)
        defer { mock.stop() }

        let configuration = APNsConfiguration(keyPath: key.privateKeyFile, keyID: LoadIdentity.keyID, teamID: LoadIdentity.teamID, bundleID: LoadIdentity.bundleID,
                                              environment: .custom(pushHost: "127.0.0.1", pushPort: mock.pushPort,
                                                                   managementHost: "127.0.0.1", managementPort: mock.managementPort))
        let providerToken = try ProviderToken(configuration: configuration, clock: SystemClock())
        let loop = EventLoop.start(name: "load-client")
        defer { loop.stopAndWait() }
        let apns = try APNsConnections(configuration: configuration, providerToken: providerToken,
                                       options: .init(pushConnections: 1, managementConnections: 1,
                                                      maxQueuedRequests: options.requests + options.concurrency,
                                                      tls: TLSConfiguration(caFile: mock.caFile)),
                                       loop: loop)
        let payload = Self.payload(bytes: options.bodyBytes)
        let tokens = (0..<options.requests).map { String(format: "%064x", $0 + 1) }

        let uriFile = directory + "/uris.txt"
        let bodyFile = directory + "/body.json"
        try tokens.map { "https://127.0.0.1:\(mock.pushPort)/3/device/\($0)" }.joined(separator: "\n")
            .write(toFile: uriFile, atomically: true, encoding: .utf8)
        try Data(payload).write(to: URL(fileURLWithPath: bodyFile))
        let headers = [("authorization", try providerToken.current()), ("apns-push-type", "liveactivity"),
                       ("apns-topic", LoadIdentity.bundleID + ".push-type.liveactivity"), ("apns-priority", "5"),
                       ("content-type", "application/json")]

        print("client-ceiling: \(options.requests) device pushes per round, 1 connection, \(options.concurrency) concurrent streams, "
              + "\(payload.count)-byte bodies, unique token paths, \(options.rounds) rounds; mock APNs as a separate process "
              + "with \(options.mockThreads) thread(s)")
        print("round  touchline req/s  (µs CPU/req)   h2load req/s  (µs CPU/req)   mock µs CPU/req (ours / h2load)")
        var ours: [Double] = []
        var theirs: [Double] = []
        for round in 1...options.rounds {
            let mockBefore = mock.cpuSeconds
            let selfBefore = processCPUSeconds(pid: getpid())
            let (seconds, failures) = await PushLoad.run(client: apns.client, tokens: tokens, payload: payload,
                                                         concurrency: options.concurrency)
            let selfCPU = processCPUSeconds(pid: getpid()) - selfBefore
            let mockMiddle = mock.cpuSeconds
            guard failures.isEmpty else { throw LoadError("touchline client failures: \(failures)") }
            let reference = try H2Load.run(requests: options.requests, concurrency: options.concurrency, connections: 1,
                                           uriFile: uriFile, bodyFile: bodyFile, headers: headers)
            guard reference.succeeded == options.requests else {
                throw LoadError("h2load got \(reference.succeeded) of \(options.requests) 2xx answers")
            }
            let mockAfter = mock.cpuSeconds
            let rate = Double(options.requests) / seconds
            ours.append(rate)
            theirs.append(reference.requestsPerSecond)
            let perRequest = { (cpu: Double) in String(format: "%.2f", cpu * 1e6 / Double(options.requests)) }
            print(String(format: "%5d  %15.0f  (%@)   %12.0f  (%@)   %@ / %@", round, rate, perRequest(selfCPU), reference.requestsPerSecond,
                         perRequest(reference.cpuSeconds), perRequest(mockMiddle - mockBefore), perRequest(mockAfter - mockMiddle)))
        }
        let ratio = median(ours) / median(theirs)
        print(String(format: "median touchline %.0f req/s, h2load %.0f req/s: ratio %.2f (target >= %.2f)", median(ours), median(theirs),
                     ratio, options.target))
        print(String(format: "peak RSS: touchline-load %.1f MB, mock %.1f MB", Double(processPeakResidentBytes(pid: getpid())) / 1e6,
                     Double(mock.peakResidentBytes) / 1e6))
        await apns.shutdown()
        return !options.check || ratio >= options.target
    }

    /// A Live Activity update of about `bytes` bytes (the score state padded with a commentary line).
    static func payload(bytes: Int) -> [UInt8] {
        func build(_ padding: Int) -> [UInt8] {
            LiveActivityPayload(timestamp: SystemClock().now(), event: .update,
                                contentState: .object([.init("home", .integer(2)), .init("away", .integer(1)),
                                                       .init("clock", .integer(4020)), .init("period", .string("2H")),
                                                       .init("lastEvent", .string(String(repeating: "x", count: padding)))]),
                                staleDate: SystemClock().now() + .seconds(900), relevanceScore: 50).encoded()
        }
        let base = build(0).count
        return build(max(0, bytes - base))
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
