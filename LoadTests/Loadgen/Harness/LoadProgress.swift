import Foundation
import LoadKit
import Measurements
import Synchronization

/// What a running scenario has done so far, fed from the harness (every request of an
/// ``HTTPLoadClient``, the phases scenarios announce, the matches they end) and shown by
/// ``ProgressPrinter``. One per process (``shared``): scenarios run one after another.
final class LoadProgress: Sendable {
    static let shared = LoadProgress()

    private struct State {
        var scenario = ""
        var phase = ""
        var startedAt = monotonicNanoseconds()
        var phaseEndsAt: Int64?
        var requests = 0
        var latencies = LatencyHistogram()
        var matches: (done: Int, of: Int)?
    }

    private let state = Mutex(State())

    /// A new scenario: everything starts again.
    func begin(_ scenario: String) {
        state.withLock { $0 = State(scenario: scenario) }
    }

    /// A new phase, expected to last `seconds` when known; match counts start again with it.
    func phase(_ name: String, expectedSeconds seconds: Double? = nil, matches: Int? = nil) {
        state.withLock {
            $0.phase = name
            $0.phaseEndsAt = seconds.map { monotonicNanoseconds() + Int64($0 * 1e9) }
            $0.matches = matches.map { (0, $0) }
        }
    }

    /// One request answered after `nanoseconds`.
    func requestAnswered(after nanoseconds: Int64) {
        state.withLock {
            $0.requests += 1
            $0.latencies.record(nanoseconds)
        }
    }

    /// One match of the phase ended.
    func matchEnded() {
        state.withLock { $0.matches = $0.matches.map { ($0.done + 1, $0.of) } }
    }

    /// The line since the last call, `interval` seconds ago: the requests and latencies are the
    /// interval's, then start again.
    func take(interval: Double) -> ProgressLine? {
        state.withLock { state in
            guard !state.scenario.isEmpty else { return nil }
            let now = monotonicNanoseconds()
            let line = ProgressLine(scenario: state.scenario, phase: state.phase, elapsedSeconds: Double(now - state.startedAt) / 1e9,
                                    remainingSeconds: state.phaseEndsAt.map { Double($0 - now) / 1e9 },
                                    requestsPerSecond: Double(state.requests) / max(interval, 0.001),
                                    p99Milliseconds: state.latencies.count > 0 ? state.latencies.summary.p99 : nil, matchesEnded: state.matches)
            state.requests = 0
            state.latencies = LatencyHistogram()
            return line
        }
    }
}

/// Shows ``LoadProgress`` while a scenario runs: on a terminal, one line redrawn every second;
/// into a pipe or a file, a plain line every 10 s (a log must not fill with carriage returns).
/// Other output (``ScenarioLog``) clears the terminal line first, and the next tick redraws it.
enum ProgressPrinter {
    /// Standard output is a terminal.
    static let isTerminal = isatty(STDOUT_FILENO) != 0
    private static let started = Atomic(false)
    /// Serialises the printing of the line and of other output.
    static let output = Mutex(())

    /// Starts the printing thread once; it runs until the process exits.
    static func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let interval = isTerminal ? 1.0 : 10.0
        Thread {
            while true {
                Thread.sleep(forTimeInterval: interval)
                guard let line = LoadProgress.shared.take(interval: interval) else { continue }
                output.withLock { _ in
                    if isTerminal {
                        print("\r\u{1B}[2K" + line.rendered(width: terminalWidth - 1), terminator: "")
                    } else {
                        print("progress: " + line.rendered())
                    }
                    fflush(nil)
                }
            }
        }.start()
    }

    /// No more progress: the line is cleared and nothing more is printed (the report follows).
    static func stop() {
        output.withLock { _ in
            LoadProgress.shared.begin("")
            if isTerminal { print("\r\u{1B}[2K", terminator: "") }
            fflush(nil)
        }
    }

    /// Prints `text` as a line of its own, clearing the progress line on a terminal first.
    static func say(_ text: String) {
        output.withLock { _ in
            print((isTerminal ? "\r\u{1B}[2K" : "") + text)
            fflush(nil)
        }
    }

    private static var terminalWidth: Int {
        var size = winsize()
        return ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 10 ? Int(size.ws_col) : 100
    }
}
