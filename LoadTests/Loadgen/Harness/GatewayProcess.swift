import APNsMock
import Foundation

/// `touchline serve` running as a separate process, so that the load generator and the gateway
/// do not share threads and the gateway's CPU time can be read on its own.
final class GatewayProcess {
    private let child: SiblingProcess
    /// The provider API's port on 127.0.0.1.
    let port: Int

    /// Starts `touchline serve` with `arguments`, which must include `--listen 127.0.0.1:PORT`, on
    /// the CPUs `cpus` (nil: any), and waits for it to print the port it listens on.
    /// `executable` replaces the `touchline` next to `touchline-load`; `environment` and
    /// `transcript` are ``SiblingProcess``'s.
    init(arguments: [String], cpus: String? = nil, executable: String? = nil, environment: [String: String] = [:],
         transcript: String? = nil) throws {
        let marker = "provider API on http://127.0.0.1:"
        child = try SiblingProcess(executable ?? "touchline", arguments: ["serve"] + arguments, readyMarker: marker, cpus: cpus,
                                   environment: environment, transcript: transcript)
        guard let port = child.line(containing: marker)?.components(separatedBy: marker).last?
            .split(separator: "/").first.flatMap({ Int($0) }) else {
            throw LoadError("cannot read the gateway's port from:\n\(child.startupOutput)")
        }
        self.port = port
    }

    /// `touchline serve` on SQLite under `directory` (in `dataDirectory` when given), with
    /// `adminKey`, on `listenPort` (0: any free port), sending to the mock APNs at `host` (its push
    /// and management ports, trusting `caFile`) with the load identity's `key`.
    convenience init(directory: String, adminKey: String, key: MockAPNsProviderKeyFiles.Files, host: String, pushPort: Int,
                     managementPort: Int, caFile: String, extraArguments: [String] = [], cpus: String? = nil,
                     executable: String? = nil, listenPort: Int = 0, dataDirectory: String? = nil, environment: [String: String] = [:],
                     transcript: String? = nil) throws {
        try self.init(arguments: [
            "--listen", "127.0.0.1:\(listenPort)", "--data-dir", dataDirectory ?? directory + "/data", "--admin-key", adminKey,
            "--apns-key", key.privateKeyFile, "--apns-key-id", LoadIdentity.keyID, "--apns-team-id", LoadIdentity.teamID,
            "--apns-bundle-id", LoadIdentity.bundleID, "--apns-ca-file", caFile,
            "--apns-environment", "\(host):\(pushPort),\(host):\(managementPort)",
        ] + extraArguments, cpus: cpus, executable: executable, environment: environment, transcript: transcript)
    }

    /// A random admin key for one run.
    static func randomAdminKey() -> String { (0..<32).map { _ in String(UInt8.random(in: 0...15), radix: 16) }.joined() }

    var pid: Int32 { child.process.pid }
    var cpuSeconds: Double { child.cpuSeconds }
    var peakResidentBytes: Int { child.peakResidentBytes }
    func stop() { child.stop() }
    /// SIGTERM without waiting for the exit (``stop()`` waits).
    func askToStop() { child.askToStop() }
    /// `kill -9`: gone at once, without its shutdown.
    func kill() { child.kill() }
    /// SIGSTOP: frozen, its connections kept.
    func pause() { child.send(signal: SIGSTOP) }
    /// SIGCONT after ``pause()``.
    func resume() { child.send(signal: SIGCONT) }
    var isRunning: Bool { child.process.isRunning }
}
