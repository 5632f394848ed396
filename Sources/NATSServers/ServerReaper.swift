import Foundation
import Synchronization

/// The `nats-server` processes of clusters still running: killed when this process exits, so a
/// run that ends before a cluster's owner let it go (a test's shutdown left to a `Task` that the
/// exit overtakes) leaves no server behind to load the machine for what runs next (a benchmark,
/// the next test run).
///
/// A process that crashes never runs its exit handlers, and the kernel offers no parent-death
/// signal a `posix_spawn`ed child could rely on (it follows the spawning *thread*, and the
/// threads of Swift's pools come and go). So each server is also written down, with its owner's
/// pid and its configuration file, in a directory shared by every process of the user
/// (``recordsDirectory``); the first cluster a process starts kills the servers recorded there
/// whose owner is gone, after checking that the process still runs that configuration file
/// (a pid may have been reused).
enum ServerReaper {
    private static let running = Mutex<Set<pid_t>>([])
    private static let installed: Bool = {
        atexit { ServerReaper.killAll() }
        reapOrphans(recordedIn: recordsDirectory)
        return true
    }()

    /// Where servers are written down, one file per server named by its pid.
    static let recordsDirectory = NSTemporaryDirectory() + "/touchline-nats-servers-\(getuid())"

    /// A server was started with `configurationFile`.
    static func adopt(_ pid: pid_t, configurationFile: String) {
        _ = installed
        running.withLock { _ = $0.insert(pid) }
        record(pid, owner: getpid(), configurationFile: configurationFile, in: recordsDirectory)
    }

    /// A server was stopped by its cluster.
    static func release(_ pid: pid_t) {
        running.withLock { _ = $0.remove(pid) }
        forgetRecord(of: pid)
    }

    /// Removes server `pid`'s record from ``recordsDirectory`` (best effort: a record left
    /// behind is forgotten by the next reap, once its owner is gone).
    private static func forgetRecord(of pid: pid_t) {
        try? FileManager.default.removeItem(atPath: "\(recordsDirectory)/\(pid)")
    }

    /// Writes down server `pid`, started by `owner` with `configurationFile`.
    static func record(_ pid: pid_t, owner: pid_t, configurationFile: String, in directory: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? Data("\(owner)\n\(configurationFile)\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/\(pid)"))
    }

    /// Kills the servers written down in `directory` whose owner no longer runs and which still
    /// run their configuration file, and forgets every record whose owner is gone. Returns the
    /// pids killed.
    @discardableResult
    static func reapOrphans(recordedIn directory: String) -> [pid_t] {
        var killed: [pid_t] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            let path = "\(directory)/\(name)"
            guard let pid = pid_t(name), let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            guard lines.count >= 2, let owner = pid_t(lines[0]), !isRunning(owner) else { continue }
            if runs(pid, configurationFile: String(lines[1])) {
                kill(pid, SIGKILL)
                killed.append(pid)
            }
            try? FileManager.default.removeItem(atPath: path)
        }
        return killed
    }

    private static func isRunning(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Whether process `pid` has `configurationFile` among its arguments.
    private static func runs(_ pid: pid_t, configurationFile: String) -> Bool {
        guard let arguments = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
        return arguments.split(separator: 0).contains { String(decoding: $0, as: UTF8.self) == configurationFile }
    }

    private static func killAll() {
        for pid in running.withLock({ $0 }) {
            kill(pid, SIGKILL)
            forgetRecord(of: pid)
        }
    }
}
