import Foundation

/// Which `nats-server` the clusters of the tests and the load tool run: the one
/// `TOUCHLINE_NATS_SERVER` names when it is set, else the first `nats-server` on `PATH`, else
/// Debian's `/usr/sbin/nats-server` (not on an ordinary user's `PATH`). A setting that names no
/// executable file is reported as such rather than replaced by another server.
public enum NATSServerExecutable {
    /// The environment variable that names the server to run.
    public static let setting = "TOUCHLINE_NATS_SERVER"

    /// The server this process runs (read once).
    public static let current = find(environment: ProcessInfo.processInfo.environment, isExecutable: FileManager.default.isExecutableFile(atPath:))

    /// The server `environment` names or finds, or why there is none.
    static func find(environment: [String: String], isExecutable: (String) -> Bool) -> Result<String, NotFound> {
        if let named = environment[setting], !named.isEmpty {
            return isExecutable(named) ? .success(named) : .failure(NotFound(description: "\(setting)=\(named) is not an executable file"))
        }
        let onPath = (environment["PATH"] ?? "").split(separator: ":").map { "\($0)/nats-server" }
        guard let found = (onPath + ["/usr/sbin/nats-server"]).first(where: isExecutable) else {
            return .failure(NotFound(description: "no nats-server on PATH or at /usr/sbin/nats-server; install one or name it with \(setting)"))
        }
        return .success(found)
    }

    /// Why no server can run.
    public struct NotFound: Error, CustomStringConvertible {
        public let description: String
    }
}
