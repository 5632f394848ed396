import APNsMock
import Foundation

/// `touchline serve` that can be killed with SIGKILL and started again on the same data, at the
/// same address, as a supervisor (systemd, Kubernetes) restarts a crashed gateway: providers
/// keep the address they know, and everything the gateway acknowledged must be there again.
///
/// Its output of every start goes to one transcript file, so a run that found something keeps
/// the gateway's own account of it.
final class RestartableGateway {
    struct Launch {
        var directory: String
        var dataDirectory: String
        var key: MockAPNsProviderKeyFiles.Files
        var pushPort: Int
        var managementPort: Int
        var caFile: String
        var extraArguments: [String]
        var environment: [String: String]
        var executable: String?
        var transcript: String
    }

    private let launch: Launch
    private(set) var process: GatewayProcess
    let target: GatewayTarget
    /// Starts so far, the first one included.
    private(set) var starts = 1

    /// Starts the gateway on any free port and waits until it is ready (``waitUntilReady(timeout:)``).
    init(_ launch: Launch) throws {
        self.launch = launch
        let adminKey = GatewayProcess.randomAdminKey()
        process = try Self.start(launch, adminKey: adminKey, port: 0)
        target = GatewayTarget(host: "127.0.0.1", port: process.port, adminKey: adminKey)
        try waitUntilReady(timeout: 30)
    }

    private static func start(_ launch: Launch, adminKey: String, port: Int) throws -> GatewayProcess {
        try GatewayProcess(directory: launch.directory, adminKey: adminKey, key: launch.key, host: "127.0.0.1", pushPort: launch.pushPort,
                           managementPort: launch.managementPort, caFile: launch.caFile, extraArguments: launch.extraArguments,
                           executable: launch.executable, listenPort: port, dataDirectory: launch.dataDirectory,
                           environment: launch.environment, transcript: launch.transcript)
    }

    /// `kill -9`, and waits until the process is gone.
    func kill() { process.kill() }

    /// Starts it again on the same data and port; returns the seconds until it was ready.
    func restart() throws -> Double {
        let started = monotonicNanoseconds()
        process = try Self.start(launch, adminKey: target.adminKey, port: target.port)
        starts += 1
        try waitUntilReady(timeout: 60)
        return Double(monotonicNanoseconds() - started) / 1e9
    }

    /// Polls `GET /readyz` until it answers 200 (both stores writable, every APNs pool connected).
    func waitUntilReady(timeout: Double) throws {
        let deadline = monotonicNanoseconds() + Int64(timeout * 1e9)
        var last = "no answer"
        while monotonicNanoseconds() < deadline {
            guard process.isRunning else { throw LoadError("the gateway exited while starting; see \(launch.transcript)") }
            if let response = try? target.connect().send("GET", "/readyz") {
                if response.status == 200 { return }
                last = "\(response.status) \(response.text.prefix(300))"
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw LoadError("the gateway was not ready within \(Int(timeout)) s: /readyz answered \(last)")
    }

    var pid: Int32 { process.pid }

    /// Stops it gracefully (SIGTERM); kills it if it has not exited after `timeout` seconds.
    /// Returns the seconds it took to exit, nil when it had to be killed.
    @discardableResult
    func stop(timeout: Double = 15) -> Double? {
        guard process.isRunning else { return 0 }
        let started = monotonicNanoseconds()
        Glibc.kill(process.pid, SIGTERM)
        while process.isRunning {
            if Double(monotonicNanoseconds() - started) / 1e9 > timeout {
                process.kill()
                return nil
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return Double(monotonicNanoseconds() - started) / 1e9
    }
}
