import APNsMock
import Foundation
import LoadKit
import Measurements

/// `touchline-mock-apns` running as a separate process, so that benchmarks measure the client
/// and the server on their own threads and CPU accounting stays per process.
final class MockProcess {
    private let child: SiblingProcess
    let pushPort: Int
    let managementPort: Int
    let caFile: String

    /// Starts the mock with `arguments` on the CPUs `cpus` (nil: any) and waits for it to print its ports.
    init(arguments: [String], cpus: String? = nil) throws {
        let child = try SiblingProcess("touchline-mock-apns", arguments: arguments, readyMarker: "CA file", cpus: cpus)
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
    convenience init(directory: String, key: MockAPNsProviderKeyFiles.Files, threads: Int, extraArguments: [String] = [],
                     cpus: String? = nil) throws {
        try self.init(arguments: ["--bundle-id", LoadIdentity.bundleID, "--team-id", LoadIdentity.teamID,
                                  "--key", "\(LoadIdentity.keyID)=\(key.publicKeyFile)", "--push-port", "0", "--management-port", "0",
                                  "--threads", String(threads), "--cert-dir", directory + "/tls", "--no-detail-header",
                                  "--initial-streams", "1000"] + extraArguments, cpus: cpus)
    }

    /// Asks the mock for its arrival report since the last one (answers by status, accepted
    /// pushes and, with `--arrival-latency FIELD`, their latencies, per endpoint and priority);
    /// the mock then starts a new period.
    func takeArrivalReport() throws -> ArrivalReport {
        child.send(signal: SIGUSR1)
        return try ArrivalReport(output: child.waitForOutput(through: ArrivalReport.endMarker, timeout: 10))
    }

    var pid: Int32 { child.process.pid }
    var cpuSeconds: Double { child.cpuSeconds }
    var peakResidentBytes: Int { child.peakResidentBytes }
    func stop() { child.stop() }
}

/// A benchmark could not run; the message says why.
struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
