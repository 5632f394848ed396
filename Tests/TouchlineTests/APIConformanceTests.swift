import ChildProcesses
import Foundation
import Testing
import TestSlots

/// docs/openapi.json against a running gateway, by an independent tool: schemathesis (PyPI)
/// generates requests from the document, valid and invalid ones, and chains them through the
/// document's links (create a channel, post its events, start it, end it, delete it), and checks
/// every answer against the document.
///
/// The gateway runs as `touchline serve --dev` (the bundled mock APNs), so every route really
/// works: channels are created at the mock, pushes are sent. The checks that must hold: no 5xx,
/// no status code, content type, header or body outside the document, invalid data refused,
/// a method no path takes answered 405 with `Allow`, nothing served without a key. One check is
/// left out, `positive_data_acceptance` ("a request the schema allows is accepted"): many of the
/// API's rules are not a JSON Schema's to say (an `at` in the future, a `follows` audience only
/// with `event` `start`, sports events only on a sports channel, a job id that exists), and their
/// refusals are documented 4xx answers, which that check counts as failures.
///
/// Deterministic generation: the same document and gateway give the same requests, so a failure
/// repeats. The run is bounded by `--max-examples` per operation (about 14,000 requests in about
/// a minute here) and by `timeout`. Long: it takes its slot as the run begins (started among the
/// last, its minute ended the run alone).
@Suite("API document against the running gateway", .heavy(long: true))
struct APIConformanceTests {
    /// The repository root (this file is Tests/TouchlineTests/APIConformanceTests.swift).
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// `python3` on `PATH`, or nil. Schemathesis runs as its module (`python3 -m schemathesis.cli`)
    /// rather than as the script pip writes, which a Python manager's shims may not show on `PATH`
    /// until they are rebuilt.
    private static let python: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        .split(separator: ":").map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test func schemathesisFindsNoAnswerOutsideTheDocument() async throws {
        let python = try #require(Self.python, "python3 is not on PATH")
        let installed = try await ChildProcess.run(python, ["-m", "schemathesis.cli", "--version"])
        try #require(installed.termination.status == 0, "schemathesis is not installed (make deps installs it from PyPI): \(installed.output)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-conformance-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gateway = try await ServeProcess(dataDirectory: directory + "/data")
        defer { _ = gateway.terminate() }

        // `/v1/stream` never ends by itself: one event is enough to check it (without this,
        // each of its cases would read for the whole request timeout).
        let configuration = directory + "/schemathesis.toml"
        try "max-stream-events = 1\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let arguments = [
            "600", python, "-m", "schemathesis.cli", "--config-file", configuration, "run", Self.root + "/docs/openapi.json",
            "--url", "http://127.0.0.1:\(gateway.port)",
            "--header", "Authorization: Bearer \(GatewayFixture.adminKey)",
            "--phases", "examples,coverage,fuzzing,stateful", "--mode", "all",
            "--checks", "all", "--exclude-checks", "positive_data_acceptance",
            "--max-examples", "50", "--generation-deterministic", "--no-shrink",
            "--workers", "1", "--request-timeout", "10", "--no-color",
            "--report", "junit", "--report-dir", directory + "/report",
        ]
        // From the temporary folder: schemathesis and its generator keep their caches in the
        // working directory, which must not be the repository.
        let (termination, output) = try await ChildProcess.run("/usr/bin/timeout", arguments, directory: directory)
        let failures = output.split(separator: "\n", omittingEmptySubsequences: false)
            .drop { !$0.contains("FAILURES") }.prefix(400).joined(separator: "\n")
        #expect(termination.status == 0, "schemathesis exited \(termination.status):\n\(failures.isEmpty ? String(output.suffix(8000)) : failures)")
        // Every phase ran and passed: the stateful one (links from one answer to the next
        // request) and the negative cases (in coverage and fuzzing) are what this test is for.
        for phase in ["Examples", "Coverage", "Fuzzing", "Stateful"] {
            #expect(output.contains("✅ \(phase)"), "the \(phase) phase did not pass:\n\(output.suffix(4000))")
        }
    }
}
