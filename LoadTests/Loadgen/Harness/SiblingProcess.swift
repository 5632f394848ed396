import ChildProcesses
import Foundation
import LoadKit
import Synchronization

/// One of the project's executables, started from the folder of `touchline-load` as a process of
/// its own, so that benchmarks measure it on its own threads and read its CPU time and memory
/// separately.
final class SiblingProcess {
    let process: ChildProcess
    let name: String
    /// What it printed up to and including the line that said it was ready.
    let startupOutput: String
    /// What it printed since, not yet taken by ``waitForOutput(through:timeout:)`` (the last
    /// megabyte at most, so a chatty process cannot grow it without bound).
    private let laterOutput = OutputBuffer()

    /// Starts `name` (an executable next to `touchline-load`, or a path) with `arguments`, on the CPUs `cpus` (a `taskset -c` list; nil: any), and
    /// waits until a complete line containing `readyMarker` has been printed; its later output is
    /// drained so a chatty process never blocks on the pipe. `environment` is added to this
    /// process's own; with a `transcript` path, everything the process prints is also appended there.
    init(_ name: String, arguments: [String], readyMarker: String, cpus: String? = nil, environment: [String: String] = [:],
         transcript: String? = nil) throws {
        self.name = name
        // A name is looked for next to touchline-load; a path is taken as it is.
        let executable = name.contains("/") ? name
            : URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw LoadError(name.contains("/") ? "\(name) is not an executable file"
                                               : "cannot find \(name) next to touchline-load (\(executable)); build all products")
        }
        let command = pinned(executable, arguments, to: cpus)
        let transcriptFile = transcript.flatMap { path -> FileHandle? in
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            let file = FileHandle(forWritingAtPath: path)
            file?.seekToEndOfFile()
            return file
        }
        process = try ChildProcess(command.executable, command.arguments,
                                   environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                   output: .pipe, errors: .inherit)
        var text = ""
        let reader = process.output!
        while !(text.contains(readyMarker) && text.hasSuffix("\n")) {
            guard let chunk = reader.read() else { throw LoadError("\(name) exited before it was ready:\n\(text)") }
            transcriptFile?.write(chunk)
            text += String(decoding: chunk, as: UTF8.self)
        }
        startupOutput = text
        // The rest, read on a thread of its own until the process has gone.
        Thread { [laterOutput] in
            while let data = reader.read() {
                transcriptFile?.write(data)
                let chunk = String(decoding: data, as: UTF8.self)
                laterOutput.text.withLock { output in
                    output += chunk
                    let excess = output.utf8.count - (1 << 20)
                    if excess > 0 { output = String(output.utf8.dropFirst(excess))! }
                }
            }
            try? transcriptFile?.close()
        }.start()
    }

    /// Waits until the process has printed `marker` since the last call, and returns that
    /// output up to and including the marker (which is then forgotten, with what came before).
    func waitForOutput(through marker: String, timeout seconds: Double) throws -> String {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        while true {
            let taken = laterOutput.text.withLock { output -> String? in
                guard let range = output.range(of: marker) else { return nil }
                defer { output.removeSubrange(..<range.upperBound) }
                return String(output[..<range.upperBound])
            }
            if let taken { return taken }
            guard monotonicNanoseconds() < deadline, process.isRunning else {
                throw LoadError("\(name) did not print '\(marker)' within \(seconds) s")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Sends `signal` to the process (e.g. SIGUSR1 to ask the mock for a report).
    func send(signal: Int32) {
        process.signal(signal)
    }

    /// The first line of the startup output containing `marker`.
    func line(containing marker: String) -> Substring? {
        startupOutput.split(separator: "\n").first { $0.contains(marker) }
    }

    /// CPU seconds (user + system) the process has used so far.
    var cpuSeconds: Double { processCPUSeconds(pid: process.pid) }

    /// Peak resident memory in bytes.
    var peakResidentBytes: Int { processPeakResidentBytes(pid: process.pid) }

    /// Kills it at once (SIGKILL: no shutdown, no last writes) and waits until it is gone.
    func kill() {
        guard process.isRunning else { return }
        process.signal(SIGKILL)
        process.wait()
    }

    /// Asks it to stop gracefully (SIGTERM) without waiting, so that several can stop together.
    func askToStop() {
        guard process.isRunning else { return }
        process.signal(SIGTERM)
    }

    /// Stops it gracefully (SIGTERM) and waits for it to exit.
    func stop() {
        guard process.isRunning else { return }
        process.signal(SIGTERM)
        process.wait()
    }

    deinit { stop() }
}

/// The executable and arguments that start `executable` with `arguments` on the CPUs `cpus`
/// (through util-linux's `taskset`), or as they are when `cpus` is nil.
func pinned(_ executable: String, _ arguments: [String], to cpus: String?) -> (executable: String, arguments: [String]) {
    guard let cpus else { return (executable, arguments) }
    return ("/usr/bin/taskset", ["-c", cpus, executable] + arguments)
}

/// Keeps every thread of this process, and those it starts later, on the CPUs `cpus`.
func pinThisProcess(to cpus: String) throws {
    guard runTool("/usr/bin/taskset", ["-a", "-p", "-c", cpus, String(getpid())]) else {
        throw LoadError("taskset could not pin touchline-load to CPU \(cpus)")
    }
}

/// Runs a system tool (`taskset`, `mount`) to its end with its output dropped; true when it
/// could be started and exited with status 0.
func runTool(_ path: String, _ arguments: [String]) -> Bool {
    (try? ChildProcess(path, arguments, output: .null, errors: .null))?.wait() == .exited(0)
}

/// Output of a process shared between the pipe's reading thread and the benchmark.
private final class OutputBuffer: Sendable {
    let text = Mutex("")
}
