/// Where a configuration value came from, so an operator fixes it where it was set.
public enum ConfigurationSource: Sendable, Equatable, CustomStringConvertible {
    /// A member of the JSON file given with `--config`; `key` is its path, e.g. `apns.teamID`.
    case file(path: String, key: String)
    /// A `TOUCHLINE_*` environment variable.
    case environment(String)
    /// A command-line flag such as `--listen`.
    case flag(String)

    public var description: String {
        switch self {
        case .file(let path, let key): "\(key) in \(path)"
        case .environment(let name): "environment variable \(name)"
        case .flag(let name): "flag \(name)"
        }
    }
}

/// Why the gateway configuration was refused: every problem found, one line each.
///
/// Loading reports every value that cannot be read (from the file, the environment and the flags)
/// at once; if there is none, every problem of the merged configuration, so an operator fixes them
/// in one or two rounds rather than one per start. No message ever contains an API key.
public struct GatewayConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One thing to fix.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// What is wrong, naming the setting.
        public var message: String
        /// Where the offending value was set, when it came from one place.
        public var source: ConfigurationSource?

        public init(_ message: String, source: ConfigurationSource? = nil) {
            self.message = message
            self.source = source
        }

        public var description: String { source.map { "\(message) (\($0))" } ?? message }
    }

    /// Never empty.
    public var problems: [Problem]

    public init(problems: [Problem]) {
        precondition(!problems.isEmpty, "a configuration error needs at least one problem")
        self.problems = problems
    }

    /// One problem per line.
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
