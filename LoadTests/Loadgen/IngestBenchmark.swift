import Foundation
import LoadKit
import MockAPNs
import Synchronization
import TouchlineCore

/// `ingest`: the gateway (`touchline serve`, its own process) fed over its provider API while it
/// pushes over real TLS on loopback to the mock APNs, which runs inside this process with its
/// recording on so that every broadcast's arrival time can be read afterwards.
///
/// Two figures, each against its target:
/// - durable ingest: events acknowledged with 202 (so committed to SQLite) per second, posted in
///   batches over keep-alive connections, one request at a time per connection;
/// - ingest→APNs latency: from just before an event's request is written to the moment the mock
///   received the broadcast it caused, for paced events on channels whose rate limit lets every
///   change through (so no push is held back by design).
struct IngestBenchmark {
    struct Options {
        var channels = 1_000
        var connections = 8
        var latencyConnections = 8
        var batchSize = 100
        var ingestSeconds = 10.0
        var latencySeconds = 10.0
        var eventsPerChannelPerSecond = 2.0
        var ingestTarget = 50_000.0
        var latencyTargetMilliseconds = 5.0
        /// Exit non-zero when a figure misses its target.
        var check = false
    }

    /// Lets a push through every 0.25 s with a burst of 3: paced events at 2/s never wait for a token.
    static let unthrottledPolicy = #"{"minimumIntervalSeconds":0.25,"burst":3}"#

    let options: Options

    func run() throws -> Bool {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try MockAPNsProviderKeyFiles.generate(keyID: LoadIdentity.keyID, in: directory)
        let certificates = try MockAPNsDevelopmentCertificates.generate(in: directory)
        let expectedPushes = Int(options.latencySeconds * options.eventsPerChannelPerSecond) * options.channels
        let mock = try MockAPNsServer(configuration: MockAPNsConfiguration(
            bundleID: LoadIdentity.bundleID, teamID: LoadIdentity.teamID, keys: [.init(keyID: LoadIdentity.keyID, path: key.publicKeyFile)],
            certificateFile: certificates.certificateFile, privateKeyFile: certificates.privateKeyFile, recordingCapacity: expectedPushes + 10_000))
        let apns = try mock.start()
        defer { mock.stop() }
        let adminKey = GatewayProcess.randomAdminKey()
        let gateway = try GatewayProcess(directory: directory, adminKey: adminKey, key: key, host: apns.host, pushPort: apns.pushPort,
                                         managementPort: apns.managementPort, caFile: certificates.caFile)
        defer { gateway.stop() }
        let port = gateway.port
        let connect: @Sendable () throws -> HTTPLoadClient = { try HTTPLoadClient(host: "127.0.0.1", port: port, apiKey: adminKey) }

        print("ingest: gateway (touchline serve) as a separate process, mock APNs in this process over TLS on loopback; "
              + "\(options.channels) no-storage channels, \(options.connections) keep-alive HTTP/1.1 connections, one request at a time each")
        let ingestChannels = (0..<options.channels).map { String(format: "ingest-%05d", $0) }
        let latencyChannels = (0..<options.channels).map { String(format: "latency-%05d", $0) }
        let setupStart = monotonicNanoseconds()
        try createChannels(ingestChannels, policy: nil, connect: connect)
        try createChannels(latencyChannels, policy: Self.unthrottledPolicy, connect: connect)
        print(String(format: "setup: %d channels created in %.2f s", 2 * options.channels, Double(monotonicNanoseconds() - setupStart) / 1e9))

        let ingest = try measureIngest(ingestChannels, connect: connect, gateway: gateway)
        print(String(format: "durable ingest: %d events acknowledged with 202 in %.2f s = %.0f events/s (target >= %.0f): ratio %.2f",
                     ingest.events, ingest.seconds, ingest.rate, options.ingestTarget, ingest.rate / options.ingestTarget))
        print(String(format: "  gateway CPU %.2f µs/event, batches of %d, %.2f ms per request on average",
                     ingest.gatewayCPU * 1e6 / Double(ingest.events), options.batchSize,
                     ingest.seconds * 1e3 * Double(options.connections) / Double(max(1, ingest.events / options.batchSize))))

        // The ingest channels' last states wait up to one minimum interval (2 s by default) for their
        // tokens; let them go out before the latency run so that they do not share its time.
        Thread.sleep(forTimeInterval: 3)
        mock.resetRecording()
        let latency = try measureLatency(latencyChannels, connect: connect, mock: mock)
        let passedLatency = latency.received.p99 <= options.latencyTargetMilliseconds
        print(String(format: "ingest→APNs latency: %d events paced at %.0f/s per channel over %d connections, %d broadcasts received",
                     latency.sent, options.eventsPerChannelPerSecond, options.latencyConnections, latency.received.count))
        print("  send → mock received the broadcast: \(latency.received.text)"
              + String(format: " (target p99 <= %.1f ms): ratio %.2f", options.latencyTargetMilliseconds,
                       options.latencyTargetMilliseconds / max(latency.received.p99, 1e-9)))
        print("  send → 202 (durable):               \(latency.acknowledged.text)")
        print("  send started after its paced slot:  \(latency.late.text)")
        print(String(format: "peak RSS: gateway %.1f MB, touchline-load with the mock %.1f MB", Double(gateway.peakResidentBytes) / 1e6,
                     Double(processPeakResidentBytes(pid: getpid())) / 1e6))
        let passed = ingest.rate >= options.ingestTarget && passedLatency && latency.received.count == latency.sent
        return !options.check || passed
    }

    private func createChannels(_ ids: [String], policy: String?, connect: @escaping @Sendable () throws -> HTTPLoadClient) throws {
        let connections = options.connections
        _ = try onThreads(connections) { index in
            let client = try connect()
            for id in stride(from: index, to: ids.count, by: connections).map({ ids[$0] }) {
                let body = #"{"id":"\#(id)","storagePolicy":"no-storage""# + (policy.map { #","policy":\#($0)"# } ?? "") + "}"
                let response = try client.send("POST", "/v1/channels", body: Array(body.utf8))
                guard response.status == 200 || response.status == 201 else {
                    throw LoadError("creating channel \(id) answered \(response.status): \(response.text)")
                }
            }
        }
    }

    private struct IngestResult {
        var events: Int
        var seconds: Double
        var gatewayCPU: Double
        var rate: Double { Double(events) / seconds }
    }

    /// Each connection owns every K-th channel, so a channel's `seq` grows in one thread only.
    private func measureIngest(_ ids: [String], connect: @escaping @Sendable () throws -> HTTPLoadClient,
                               gateway: GatewayProcess) throws -> IngestResult {
        let (connections, batchSize) = (options.connections, options.batchSize)
        let cpuBefore = gateway.cpuSeconds
        let start = monotonicNanoseconds()
        let deadline = start + Int64(options.ingestSeconds * 1e9)
        let acknowledged = try onThreads(connections) { index in
            let client = try connect()
            let owned = stride(from: index, to: ids.count, by: connections).map { ids[$0] }
            var lastSeq = [Int](repeating: 0, count: owned.count)
            var events = 0
            var turn = 0
            while monotonicNanoseconds() < deadline {
                let channel = turn % owned.count
                turn += 1
                var body = #"{"events":["#
                for number in 0..<batchSize {
                    lastSeq[channel] += 1
                    let seq = lastSeq[channel]
                    body += (number == 0 ? "" : ",") + #"{"seq":\#(seq),"patch":{"home":\#(seq / 7 % 10),"away":\#(seq / 11 % 10),"clock":\#(seq)}}"#
                }
                body += "]}"
                let response = try client.send("POST", "/v1/channels/\(owned[channel])/events", body: Array(body.utf8))
                guard response.status == 202,
                      let reply = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
                      let accepted = reply["accepted"] as? Int else {
                    throw LoadError("posting events to \(owned[channel]) answered \(response.status): \(response.text)")
                }
                events += accepted
            }
            return events
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        return IngestResult(events: acknowledged.reduce(0, +), seconds: seconds, gatewayCPU: gateway.cpuSeconds - cpuBefore)
    }

    private struct LatencyResult {
        var sent: Int
        /// From the send to the mock's receipt of the broadcast, in ms.
        var received: Percentiles
        /// From the send to the 202 (the event is durable), in ms.
        var acknowledged: Percentiles
        /// How late requests started after their paced slot, in ms: stalls the measured times miss.
        var late: Percentiles
    }

    /// Paces single-event requests so that every channel gets `eventsPerChannelPerSecond`
    /// (``PacedEvents``), then reads the broadcasts' arrival times from the mock's recording.
    private func measureLatency(_ ids: [String], connect: @escaping @Sendable () throws -> HTTPLoadClient,
                                mock: MockAPNsServer) throws -> LatencyResult {
        let timings = try PacedEvents(channels: ids, connections: options.latencyConnections,
                                      eventsPerChannelPerSecond: options.eventsPerChannelPerSecond)
            .run(seconds: options.latencySeconds, connect: connect)
        // Wait until the mock has seen every broadcast, or 5 s without progress.
        var received: [MockAPNsRecordedRequest] = []
        var lastProgress = monotonicNanoseconds()
        while true {
            let now = mock.recordedRequests().filter { $0.endpoint == .broadcast && $0.status == 200 }
            if now.count > received.count { lastProgress = monotonicNanoseconds() }
            received = now
            if received.count >= timings.count || monotonicNanoseconds() - lastProgress > 5_000_000_000 { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        let latencies = received.compactMap { request -> Double? in
            guard let sentAt = Self.sentAt(in: request.bodyText) else { return nil }
            return Double(request.receivedAt.nanoseconds - sentAt) / 1e6
        }
        guard !latencies.isEmpty else { throw LoadError("the mock received no broadcast carrying a send time") }
        return LatencyResult(sent: timings.count, received: Percentiles(latencies), acknowledged: Percentiles(timings.map(\.acknowledged)),
                             late: Percentiles(timings.map(\.late)))
    }

    /// The `sentAt` number in a broadcast payload's content-state.
    static func sentAt(in payload: String) -> Int64? {
        guard let range = payload.range(of: #""sentAt":"#) else { return nil }
        return Int64(payload[range.upperBound...].prefix { $0.isNumber })
    }
}

/// Runs `body(index)` for each index on a thread of its own (blocking I/O in parallel) and
/// returns the results in index order, or the first error.
func onThreads<Value: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Value) throws -> [Value] {
    let results = ThreadResults<Value>()
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            let result = Result { try body(index) }
            results.values.withLock { $0[index] = result }
            group.leave()
        }.start()
    }
    group.wait()
    return try results.values.withLock { values in try (0..<count).map { try values[$0]!.get() } }
}

/// p50, p99 and the maximum of a sample.
struct Percentiles {
    var count: Int
    var p50: Double
    var p99: Double
    var max: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        func at(_ share: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * share))] }
        (count, p50, p99, max) = (sorted.count, at(0.5), at(0.99), sorted.last ?? 0)
    }

    var text: String { String(format: "p50 %.2f ms, p99 %.2f ms, max %.2f ms", p50, p99, max) }
}

/// Results handed from worker threads to the waiting one.
private final class ThreadResults<Value: Sendable>: Sendable {
    let values: Mutex<[Int: Result<Value, any Error>]> = Mutex([:])
}

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNanoseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline` (returns at once when it has passed).
func sleep(untilMonotonic deadline: Int64) {
    var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
}
