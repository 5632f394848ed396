import Foundation

/// `touchline-mock-apns` running as a separate process, so that benchmarks measure the client
/// and the server on their own threads and CPU accounting stays per process.
final class MockProcess {
    let process = Process()
    let pushPort: Int
    let managementPort: Int
    let caFile: String

    /// Starts the mock next to this executable and waits for it to print its ports.
    init(arguments: [String]) throws {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("touchline-mock-apns").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw LoadError("cannot find touchline-mock-apns next to touchline-load (\(executable)); build both products")
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        let reader = output.fileHandleForReading
        while !text.contains("CA file") || !text.hasSuffix("\n") {
            let chunk = reader.availableData
            if chunk.isEmpty { throw LoadError("touchline-mock-apns exited before listening:\n\(text)") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        func value(after prefix: String) -> String? {
            text.split(separator: "\n").first { $0.hasPrefix(prefix) }?.dropFirst(prefix.count).split(separator: " ").first.map(String.init)
        }
        guard let push = value(after: "push port ").flatMap(Int.init), let management = value(after: "management port ").flatMap(Int.init),
              let ca = value(after: "CA file ") else {
            throw LoadError("cannot read the mock's ports from:\n\(text)")
        }
        pushPort = push
        managementPort = management
        caFile = ca
    }

    /// CPU seconds (user + system) the process has used so far.
    var cpuSeconds: Double { processCPUSeconds(pid: process.processIdentifier) }

    /// Peak resident memory in bytes.
    var peakResidentBytes: Int { processPeakResidentBytes(pid: process.processIdentifier) }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// CPU seconds of a process from /proc/PID/stat (fields 14 and 15, in clock ticks).
func processCPUSeconds(pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // After the command name, field 3 (state) is index 0, so utime (14) is index 11.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// VmHWM (peak resident set) of a process, in bytes.
func processPeakResidentBytes(pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kb = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
    return kb * 1024
}

/// A benchmark could not run; the message says why.
struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
