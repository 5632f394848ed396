/// How important a log line is; lines below the configured level are dropped before they are
/// formatted.
///
/// The names follow syslog (without its emergency levels): `notice` is for the few normal
/// events an operator wants to see even when `info` is too chatty (start, stop, adopted
/// channels).
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, notice, warning, error

    /// The name written in log lines and accepted in configuration.
    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// The level called `name` (as written in configuration), or nil.
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}
