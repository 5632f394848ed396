import Foundation

/// `touchline serve` running as a separate process, so that the load generator and the gateway
/// do not share threads and the gateway's CPU time can be read on its own.
final class GatewayProcess {
    let process = Process()
    /// The provider API's port on 127.0.0.1.
    let port: Int

    /// Starts `touchline` (next to this executable) with `serve` and `arguments`, which must
    /// include `--listen 127.0.0.1:0`, and waits for it to print the port it listens on.
    init(arguments: [String]) throws {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("touchline").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw LoadError("cannot find touchline next to touchline-load (\(executable)); build both products")
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let marker = "provider API on http://127.0.0.1:"
        var text = ""
        let reader = output.fileHandleForReading
        while !(text.contains(marker) && text.hasSuffix("\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { throw LoadError("touchline serve exited before listening:\n\(text)") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first(where: { $0.contains(marker) }),
              let port = line.components(separatedBy: marker).last?.split(separator: "/").first.flatMap({ Int($0) }) else {
            throw LoadError("cannot read the gateway's port from:\n\(text)")
        }
        self.port = port
        // Keep draining its output so that a chatty gateway never blocks on a full pipe.
        reader.readabilityHandler = { handle in _ = handle.availableData }
    }

    /// CPU seconds (user + system) the gateway has used so far.
    var cpuSeconds: Double { processCPUSeconds(pid: process.processIdentifier) }

    /// Peak resident memory in bytes.
    var peakResidentBytes: Int { processPeakResidentBytes(pid: process.processIdentifier) }

    /// Shuts the gateway down gracefully (SIGTERM) and waits for it.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }
}
