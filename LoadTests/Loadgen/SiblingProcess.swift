import Foundation

/// One of the project's executables, started from the folder of `touchline-load` as a process of
/// its own, so that benchmarks measure it on its own threads and read its CPU time and memory
/// separately.
final class SiblingProcess {
    let process = Process()
    let name: String
    /// What it printed up to and including the line that said it was ready.
    let startupOutput: String

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
        reader.readabilityHandler = { handle in _ = handle.availableData }
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
