import TouchlineRuntime

/// Process-wide preparation the HTTP server's limits rely on, done once per start.
enum ProcessSetup {
    /// Raises the open-file limit to the hard limit (each connection costs a descriptor; the
    /// server's connection cap only protects what the limit allows) and sends libevent's own
    /// messages into `log`, rate-limited, unless the process installed a log for them. Logs
    /// what it did.
    static func prepare(log: GatewayLog) {
        LibeventLog.adopt(log: log)
        guard let change = DescriptorLimit.raiseToHardLimit() else {
            return log.warning("the open-file limit could not be raised; connections beyond it wait for a free descriptor")
        }
        if change.previous == change.current {
            log.info("open-file limit \(change.current), already the hard limit")
        } else {
            log.notice("raised the open-file limit from \(change.previous) to \(change.current) (the hard limit)")
        }
    }
}
