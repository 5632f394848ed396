import ChildProcesses
import Foundation
import Synchronization
import Testing
import TouchlineCore
import TouchlineTesting

/// A running `touchline serve` child process and the port it logged.
struct ServeProcess {
    /// The `touchline` executable next to the test bundle (built with the package).
    static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("touchline").path
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// Runs `touchline` with `arguments` to its end, or until `stopAfter` and then SIGTERM, on a
    /// thread of its own (not one of the few that run the other tests); `environment` replaces
    /// the test's own when given. Its status and everything it printed.
    static func runToEnd(_ arguments: [String], environment: [String: String]? = nil,
                         stopAfter: Duration? = nil) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<(status: Int32, output: String), Error>) in
            Thread {
                let child: ChildProcess
                do { child = try ChildProcess(executable, arguments, environment: environment) } catch { return done.resume(throwing: error) }
                if let stopAfter {
                    Thread.sleep(forTimeInterval: stopAfter.inSeconds)
                    child.signal(SIGTERM)
                }
                let text = String(decoding: child.output!.readToEnd(), as: UTF8.self)
                done.resume(returning: (child.wait().status, text))
            }.start()
        }
    }
    /// util-linux's `prlimit`, which runs a command under other resource limits.
    static let prlimit = "/usr/bin/prlimit"

    let process: ChildProcess
    let port: Int
    /// Everything it has written to standard output (its log), read as it arrives so the
    /// child never blocks on a full pipe.
    private let output = CapturedText()

    /// Starts `touchline serve` on a free port with the admin key and `arguments` added (in
    /// development mode unless `arguments` give Apple credentials), and `environment` over the
    /// test's own; with `descriptorLimit`, under `prlimit` with that soft and hard open-file limit.
    init(dataDirectory: String, arguments: [String] = [], environment: [String: String] = [:], descriptorLimit: Int? = nil) async throws {
        let mode = arguments.contains("--apns-key") || arguments.contains("--apns-team-id") ? [] : ["--dev"]
        let serve = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDirectory, "--admin-key", GatewayFixture.adminKey] + mode + arguments
        let command = descriptorLimit.map { [Self.prlimit, "--nofile=\($0):\($0)", "--", Self.executable] } ?? [Self.executable]
        // Not the test runner's standard error: should this test process die, a child left
        // holding it would keep `swift test` waiting for its end of file. Its own standard error
        // goes into the same pipe, so the log holds a crash report should it have one.
        process = try ChildProcess(command[0], Array(command.dropFirst()) + serve,
                                   environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                   output: .pipe, errors: .sameAsOutput)
        let log = process.output!
        // The log is read up to the line with the port on a thread of its own: a gateway starting
        // on a busy machine must not hold one of the task pool's few threads meanwhile.
        let (port, text) = try await withCheckedThrowingContinuation { (done: CheckedContinuation<(Int, String), Error>) in
            Thread {
                var text = ""
                let marker = /provider API on http:\/\/127\.0\.0\.1:(\d+)\/v1/
                while true {
                    guard let chunk = log.read() else {
                        return done.resume(throwing: GatewayTestClient.Failure(description: "touchline serve exited: \(text)"))
                    }
                    text += String(decoding: chunk, as: UTF8.self)
                    let found = text.split(separator: "\n").lazy.compactMap { try? marker.firstMatch(in: String($0)) }.first.flatMap { Int($0.1) }
                    if let found { return done.resume(returning: (found, text)) }
                }
            }.start()
        }
        self.port = port
        let output = output
        output.text.withLock { $0 = text }
        // The rest of the log, read on a thread of its own until the process has gone.
        Thread {
            while let chunk = log.read() { output.text.withLock { $0 += String(decoding: chunk, as: UTF8.self) } }
            output.ended.withLock { $0 = true }
        }.start()
    }

    var admin: GatewayTestClient { GatewayTestClient(port: port, key: GatewayFixture.adminKey) }

    /// True once the process has gone and its whole log has been read (read ``logLines`` after
    /// this to see its last lines: they may still be in the pipe when the process has exited).
    var logEnded: Bool { output.ended.withLock { $0 } }

    /// The complete lines logged so far.
    var logLines: [String] {
        output.text.withLock { text in text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(text.hasSuffix("\n") ? 0 : 1).map(String.init) }
    }

    func kill9() {
        process.signal(SIGKILL)
        process.wait()
    }

    /// SIGTERM, then the exit status once it has stopped.
    func terminate() -> Int32 {
        process.signal(SIGTERM)
        return process.wait().status
    }
}

/// Text appended from a reading thread and read from the test.
final class CapturedText: Sendable {
    let text = Mutex("")
    /// True once the writer closed its end and everything it wrote is in `text`.
    let ended = Mutex(false)
}

extension ServeProcess {
    /// The admin API, waiting up to 30 s per request (a request for a moving partition's channel
    /// waits for its new owner).
    var patientAdmin: GatewayTestClient { admin.waiting(upTo: 30) }
}
