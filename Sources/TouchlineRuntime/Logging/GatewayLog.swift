/// The gateway's structured logger: one JSON object per line (time, level, component, message
/// and the optional ``LogFields``), see docs/operations.md.
///
/// A value type naming the component that logs; ``named(_:)`` gives another component the same
/// level and output. Safe to use from any thread: a line below ``level`` costs one comparison
/// (the message is an autoclosure, never built), a line at or above it is formatted on the
/// calling thread and handed to the output in one piece. Device tokens can only be given as
/// ``RedactedToken``, so a whole token cannot reach a log line through a field.
public struct GatewayLog: Sendable {
    /// The part of the gateway writing, e.g. `api`, `channels`, `personal`.
    public let component: String
    /// Lines below this level are dropped.
    public let level: LogLevel
    private let output: LogOutput

    public init(component: String, level: LogLevel = .info, output: LogOutput = .standardOutput) {
        self.component = component
        self.level = level
        self.output = output
    }

    /// The same level and output for another component.
    public func named(_ component: String) -> GatewayLog {
        GatewayLog(component: component, level: level, output: output)
    }

    /// Whether lines at `level` are written (to skip work that only feeds a log line).
    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// Writes one line at `level` when that level is enabled.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, _ fields: LogFields = LogFields()) {
        emit(level, message(), fields, nil)
    }

    /// Writes one line at that level when it is enabled; the error, if any, becomes the `error`
    /// field in its own words (formatted only when the line is written).
    public func debug(_ message: @autoclosure () -> String, channel: String? = nil, job: String? = nil, apnsID: String? = nil,
                      token: RedactedToken? = nil, error: (any Error)? = nil) {
        emit(.debug, message(), LogFields(channel: channel, job: job, apnsID: apnsID, token: token), error)
    }

    public func info(_ message: @autoclosure () -> String, channel: String? = nil, job: String? = nil, apnsID: String? = nil,
                     token: RedactedToken? = nil, error: (any Error)? = nil) {
        emit(.info, message(), LogFields(channel: channel, job: job, apnsID: apnsID, token: token), error)
    }

    public func notice(_ message: @autoclosure () -> String, channel: String? = nil, job: String? = nil, apnsID: String? = nil,
                       token: RedactedToken? = nil, error: (any Error)? = nil) {
        emit(.notice, message(), LogFields(channel: channel, job: job, apnsID: apnsID, token: token), error)
    }

    public func warning(_ message: @autoclosure () -> String, channel: String? = nil, job: String? = nil, apnsID: String? = nil,
                        token: RedactedToken? = nil, error: (any Error)? = nil) {
        emit(.warning, message(), LogFields(channel: channel, job: job, apnsID: apnsID, token: token), error)
    }

    public func error(_ message: @autoclosure () -> String, channel: String? = nil, job: String? = nil, apnsID: String? = nil,
                      token: RedactedToken? = nil, error: (any Error)? = nil) {
        emit(.error, message(), LogFields(channel: channel, job: job, apnsID: apnsID, token: token), error)
    }

    private func emit(_ level: LogLevel, _ message: @autoclosure () -> String, _ fields: LogFields, _ error: (any Error)?) {
        guard isEnabled(level) else { return }
        var fields = fields
        if let error { fields.error = "\(error)" }
        output.write(LogLine.format(time: .now(), level: level, component: component, message: message(), fields: fields))
    }
}
