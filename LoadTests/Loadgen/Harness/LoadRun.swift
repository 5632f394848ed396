import ChildProcesses
import Foundation
import LoadKit

/// One invocation of `touchline-load`: runs its scenarios one after another, writes the report
/// into a new results folder, prints the verdict and exits (1 when `--check` saw a missed target
/// or a scenario failed to run).
struct LoadRun {
    let settings: LoadSettings

    func finish(_ scenarios: [() async throws -> ScenarioResult]) async -> Never {
        let started = Date()
        // Read before the run starts anything: what is running then is not the run's.
        let machine = MachineDescription.current()
        if let others = machine.otherLoadProcesses, !others.isEmpty {
            FileHandle.standardError.write(Data("touchline-load: warning: already running, and not measured: \(others.joined(separator: ", "))\n".utf8))
        }
        var results: [ScenarioResult] = []
        var failure: String?
        for scenario in scenarios {
            do {
                results.append(try await scenario())
            } catch {
                failure = "\(error)"
                ProgressPrinter.stop()
                FileHandle.standardError.write(Data("touchline-load: \(error)\n".utf8))
                break
            }
        }
        ProgressPrinter.stop()
        guard !results.isEmpty else { exit(1) }
        let report = BenchmarkReport(startedAt: started, machine: machine, toolVersion: Self.version, scenarios: results)
        do {
            let folder = try ResultsFolder.write(report, under: settings.resultsRoot)
            print("")
            print(MarkdownReport.standardTable(report))
            print("results: \(folder)/summary.md (and result.json, one SVG chart per scenario)")
        } catch {
            FileHandle.standardError.write(Data("touchline-load: writing the results failed: \(error)\n".utf8))
            exit(1)
        }
        for (scenario, check) in report.allChecks where check.failed {
            print("missed: \(scenario): \(check.name) = \(String(format: "%.2f", check.measured)) (target \(check.comparison.symbol) \(check.target))")
        }
        for (scenario, check) in report.allChecks {
            if let reason = check.invalidReason { print("invalid (not counted): \(scenario): \(check.name): \(reason)") }
        }
        if failure != nil { exit(1) }
        exit(settings.check && !report.passed ? 1 : 0)
    }

    /// The load tool's version, with the source commit when it runs from a git checkout.
    static var version: String {
        guard let git = try? ChildProcess.run("/usr/bin/git", ["rev-parse", "--short", "HEAD"], errors: .null) else { return "touchline-load" }
        let commit = git.output.trimmingCharacters(in: .whitespacesAndNewlines)
        return git.termination == .exited(0) && !commit.isEmpty ? "touchline-load (commit \(commit))" : "touchline-load"
    }
}
