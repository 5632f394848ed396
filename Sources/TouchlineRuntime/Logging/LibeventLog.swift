import CLibevent
import Synchronization

/// Routes libevent's own messages (such as its warnings when `accept()` fails) into the JSON
/// log, rate-limited, instead of libevent's default of plain text on standard error: at the
/// descriptor limit those warnings came on every turn of the loop, 85 MB in three seconds.
///
/// One callback per process (libevent has one), installed by the loops' one-time setup with a
/// default log (component `libevent`, `info`, standard output); ``install(log:)`` points it at
/// the gateway's own log. At most ``maxLinesPerSecond`` lines a second get through; the next line
/// let through says how many were dropped.
public enum LibeventLog {
    public static let maxLinesPerSecond = 10

    private struct Sink {
        var log: GatewayLog
        var limiter: LogRateLimiter
        /// Set by ``install(log:)``; ``adopt(log:)`` then leaves the log alone.
        var isExplicit = false
    }

    private static let sink = Mutex(Sink(log: GatewayLog(component: "libevent"),
                                         limiter: LogRateLimiter(maxLines: maxLinesPerSecond, per: .seconds(1))))

    private static let installed: Bool = {
        event_set_log_callback { severity, message in
            LibeventLog.receive(severity: severity, message: message.map { String(cString: $0) } ?? "")
        }
        return true
    }()

    /// Sends libevent's messages to `log` from now on (as component `libevent`, at its level and
    /// output). Safe from any thread; a later call replaces the log.
    public static func install(log: GatewayLog) {
        _ = installed
        sink.withLock {
            $0.log = log.named("libevent")
            $0.isExplicit = true
        }
    }

    /// Sends libevent's messages to `log` unless a log was installed explicitly: what each
    /// gateway start does, so a process that chose where libevent's messages go (or several
    /// gateways in one process) keeps that choice.
    public static func adopt(log: GatewayLog) {
        _ = installed
        sink.withLock { sink in
            guard !sink.isExplicit else { return }
            sink.log = log.named("libevent")
        }
    }

    /// Back to the default log (standard output), which the next ``adopt(log:)`` replaces.
    public static func resetToDefault() {
        sink.withLock {
            $0.log = GatewayLog(component: "libevent")
            $0.isExplicit = false
        }
    }

    /// Installs the callback with the default log, once (the loops' one-time setup).
    static func installDefault() {
        _ = installed
    }

    /// One message from libevent, on whatever thread logged it. Never calls back into libevent.
    static func receive(severity: Int32, message: String) {
        let level: LogLevel = switch severity {
        case EVENT_LOG_DEBUG: .debug
        case EVENT_LOG_MSG: .info
        case EVENT_LOG_WARN: .warning
        default: .error
        }
        let admitted = sink.withLock { sink -> (GatewayLog, Int)? in
            guard sink.log.isEnabled(level), let dropped = sink.limiter.admit(at: .now) else { return nil }
            return (sink.log, dropped)
        }
        guard let (log, dropped) = admitted else { return }
        log.log(level, dropped > 0 ? "\(message) (\(dropped) earlier libevent messages dropped by the rate limit)" : message)
    }
}
