import ChildProcesses
import Foundation

/// An external checker (systemd-analyze, promtool, hadolint...) found on `PATH`, and the
/// repository files the deploy tests look at.
enum DeployTool {
    /// The repository root (this file is Tests/DeployTests/DeployTool.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The `touchline` executable built next to the test bundle.
    static let touchline = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("touchline").path

    /// The full path of `name` on `PATH`, or nil.
    static func path(of name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func exists(_ name: String) -> Bool { path(of: name) != nil }

    /// Runs `name` with `arguments` from the repository root; its exit status and its standard
    /// output and error together.
    static func run(_ name: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        let (termination, output) = try await ChildProcess.run(path(of: name) ?? name, arguments, directory: root)
        return (termination.status, output)
    }

    /// The text of a repository file.
    static func read(_ relativePath: String) throws -> String {
        try String(contentsOfFile: root + "/" + relativePath, encoding: .utf8)
    }
}
