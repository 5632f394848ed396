import Foundation
import LoadKit
import MockAPNs

/// `touchline-mock-apns` running as a separate process, so that benchmarks measure the client
/// and the server on their own threads and CPU accounting stays per process.
final class MockProcess {
    private let child: SiblingProcess
    let pushPort: Int
    let managementPort: Int
    let caFile: String

    /// Starts the mock with `arguments` and waits for it to print its ports.
    init(arguments: [String]) throws {
        let child = try SiblingProcess("touchline-mock-apns", arguments: arguments, readyMarker: "CA file")
        self.child = child
        func value(after prefix: String) -> String? {
            child.line(containing: prefix).flatMap { $0.hasPrefix(prefix) ? $0 : nil }?
                .dropFirst(prefix.count).split(separator: " ").first.map(String.init)
        }
        guard let push = value(after: "push port ").flatMap(Int.init), let management = value(after: "management port ").flatMap(Int.init),
              let ca = value(after: "CA file ") else {
            throw LoadError("cannot read the mock's ports from:\n\(child.startupOutput)")
        }
        pushPort = push
        managementPort = management
        caFile = ca
    }

    /// The mock as the benchmarks run it: the load identity's bundle, team and `key`, any free
    /// ports, its TLS files under `directory`, `threads` loops, plus `extraArguments`.
    ///
    /// h2load opens its streams before it reads the server's SETTINGS, so the APNs-like first
    /// limit of one stream would refuse them: every client gets 1,000 streams from the start (the
    /// ramp from one stream is covered by the test suite; the benchmarks compare steady state).
    convenience init(directory: String, key: MockAPNsProviderKeyFiles.Files, threads: Int, extraArguments: [String] = []) throws {
        try self.init(arguments: ["--bundle-id", LoadIdentity.bundleID, "--team-id", LoadIdentity.teamID,
                                  "--key", "\(LoadIdentity.keyID)=\(key.publicKeyFile)", "--push-port", "0", "--management-port", "0",
                                  "--threads", String(threads), "--cert-dir", directory + "/tls", "--no-detail-header",
                                  "--initial-streams", "1000"] + extraArguments)
    }

    /// Latency figures of one endpoint, in ms, from the mock's `--arrival-latency` report.
    struct ArrivalLatency {
        var count: Int
        var p50: Double
        var p99: Double
        var max: Double
    }

    /// Asks the mock (started with `--arrival-latency FIELD`) for the arrival latencies since the
    /// last report, per endpoint name; the mock then starts a new period.
    func takeArrivalLatency() throws -> [String: ArrivalLatency] {
        child.send(signal: SIGUSR1)
        let text = try child.waitForOutput(through: MockAPNsArrivalReport.endMarker, timeout: 10)
        var rows: [String: ArrivalLatency] = [:]
        // "arrival latency broadcast: count 2000, p50 0.412 ms, p99 1.234 ms, max 5.600 ms"
        for line in text.split(separator: "\n") where line.hasPrefix("arrival latency ") && line.contains(": count ") {
            let parts = line.dropFirst("arrival latency ".count).split(separator: ":", maxSplits: 1)
            let numbers = parts[1].split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Double($0) }
            guard numbers.count == 4 else { throw LoadError("cannot read the mock's latency line: \(line)") }
            rows[String(parts[0])] = ArrivalLatency(count: Int(numbers[0]), p50: numbers[1], p99: numbers[2], max: numbers[3])
        }
        return rows
    }

    var cpuSeconds: Double { child.cpuSeconds }
    var peakResidentBytes: Int { child.peakResidentBytes }
    func stop() { child.stop() }
}

/// A benchmark could not run; the message says why.
struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
