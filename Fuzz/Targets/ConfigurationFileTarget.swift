import Touchline

/// The gateway's configuration file (`--config`) on any bytes: a configuration or a list of
/// problems, each naming its source, never a trap.
enum ConfigurationFileTarget {
    struct Unreadable: Error {}

    static func run(_ bytes: [UInt8]) {
        do {
            _ = try GatewayConfiguration.load(arguments: ["--config", "touchline.json"], environment: [:]) { path in
                guard path == "touchline.json" else { throw Unreadable() }
                return bytes
            }
        } catch {
            require(!error.problems.isEmpty, "a refused configuration with no problem named")
        }
    }
}
