import Foundation
import LoadKit
import Synchronization

/// One of the project's executables, started from the folder of `touchline-load` as a process of
/// its own, so that benchmarks measure it on its own threads and read its CPU time and memory
/// separately.
final class SiblingProcess {
    let process = Process()
    let name: String
    /// What it printed up to and including the line that said it was ready.
    let startupOutput: String
    /// What it printed since, not yet taken by ``waitForOutput(through:timeout:)`` (the last
    /// megabyte at most, so a chatty process cannot grow it without bound).
    private let laterOutput = OutputBuffer()

    /// Starts `name` with `arguments` and waits until a complete line containing `readyMarker`
    /// has been printed; its later output is drained so a chatty process never blocks on the pipe.
    init(_ name: String, arguments: [String], readyMarker: String) throws {
        self.name = name
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw LoadError("cannot find \(name) next to touchline-load (\(executable)); build all products")
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        let reader = output.fileHandleForReading
        while !(text.contains(readyMarker) && text.hasSuffix("\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { throw LoadError("\(name) exited before it was ready:\n\(text)") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        startupOutput = text
        reader.readabilityHandler = { [laterOutput] handle in
            let chunk = String(decoding: handle.availableData, as: UTF8.self)
            guard !chunk.isEmpty else { return }
            laterOutput.text.withLock { output in
                output += chunk
                let excess = output.utf8.count - (1 << 20)
                if excess > 0 { output = String(output.utf8.dropFirst(excess))! }
            }
        }
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
        kill(process.processIdentifier, signal)
    }

    /// The first line of the startup output containing `marker`.
    func line(containing marker: String) -> Substring? {
        startupOutput.split(separator: "\n").first { $0.contains(marker) }
    }

    /// CPU seconds (user + system) the process has used so far.
    var cpuSeconds: Double { processCPUSeconds(pid: process.processIdentifier) }

    /// Peak resident memory in bytes.
    var peakResidentBytes: Int { processPeakResidentBytes(pid: process.processIdentifier) }

    /// Stops it gracefully (SIGTERM) and waits for it to exit.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Output of a process shared between the pipe's reading thread and the benchmark.
private final class OutputBuffer: Sendable {
    let text = Mutex("")
}
