import Foundation
import Synchronization

/// The `nats-server` processes of clusters still running: killed when this process exits, so a
/// run that ends before a cluster's owner let it go (a test's shutdown left to a `Task` that the
/// exit overtakes) leaves no server behind to load the machine for what runs next (a benchmark,
/// the next test run).
enum ServerReaper {
    private static let running = Mutex<Set<pid_t>>([])
    private static let installed: Bool = {
        atexit { ServerReaper.killAll() }
        return true
    }()

    /// A server was started.
    static func adopt(_ pid: pid_t) {
        _ = installed
        running.withLock { _ = $0.insert(pid) }
    }

    /// A server was stopped by its cluster.
    static func release(_ pid: pid_t) {
        running.withLock { _ = $0.remove(pid) }
    }

    private static func killAll() {
        for pid in running.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
}
