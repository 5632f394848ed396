import Measurements

/// Renders a `BenchmarkReport` as Markdown for people: the run's `summary.md`, and the compact
/// table that docs/benchmarks.md keeps of the latest standard run.
public enum MarkdownReport {
    /// The whole report: a header naming date and machine, then per scenario its description,
    /// parameters, throughputs (with their ratio to the h2load ceiling), latency percentiles,
    /// process costs, extra tables, checks and notes, and a final verdict.
    ///
    /// - Parameter chartLinks: scenario name → relative path of its chart, shown as an image
    ///   under the scenario when present.
    public static func summary(_ report: BenchmarkReport, chartLinks: [String: String] = [:]) -> String {
        var blocks = [
            "# Touchline load report",
            Markdown.inline("\(header(report)).") + "\n\nVerdict: " + verdict(report),
        ]
        for scenario in report.scenarios {
            blocks += scenarioBlocks(scenario, chart: chartLinks[scenario.name])
        }
        blocks += ["## Verdict", verdict(report)]
        return blocks.joined(separator: "\n\n") + "\n"
    }

    /// One compact table of every scenario's headline figures (each throughput, each latency's
    /// p50 / p99, each check), preceded by a line naming the date and the machine.
    public static func standardTable(_ report: BenchmarkReport) -> String {
        var table = MarkdownTable([("scenario", .left), ("figure", .left), ("measured", .right), ("target", .right), ("ratio", .right)])
        for scenario in report.scenarios {
            for throughput in scenario.throughputs {
                table.append([
                    scenario.name, throughput.name, "\(ReportNumbers.figure(throughput.value)) \(throughput.unit)", "",
                    throughput.ceilingRatio.map { ReportNumbers.fixed($0) } ?? "",
                ])
            }
            for latency in scenario.latencies {
                let figures = "\(ReportNumbers.fixed(latency.summary.p50)) / \(ReportNumbers.fixed(latency.summary.p99)) ms"
                table.append([scenario.name, "\(latency.name) p50 / p99", figures, "", ""])
            }
            for check in scenario.checks {
                table.append([scenario.name, check.name, measured(check), "\(target(check)) \(mark(check))", ""])
            }
        }
        return Markdown.inline("Measured \(header(report)).") + "\n\n" + table.rendered + "\n"
    }

    private static func header(_ report: BenchmarkReport) -> String {
        "\(ReportDate.readable(report.startedAt)) on \(report.machine.summary); \(report.toolVersion)"
    }

    private static func scenarioBlocks(_ scenario: ScenarioResult, chart: String?) -> [String] {
        var blocks = ["## \(Markdown.inline(scenario.name))"]
        var introduction = [Markdown.inline(scenario.description)]
        let parameters = scenario.parameters.map { "\($0.name) = \($0.value)" }
        introduction.append(
            Markdown.inline("Parameters: \(parameters.isEmpty ? "none" : parameters.joined(separator: ", ")); "
                + "measured phase \(ReportNumbers.fixed(scenario.durationSeconds, decimals: 1)) s."))
        blocks.append(introduction.joined(separator: "\n\n"))
        if !scenario.throughputs.isEmpty { blocks += ["### Throughput", throughputTable(scenario.throughputs)] }
        if !scenario.latencies.isEmpty { blocks += ["### Latency (ms)", latencyTable(scenario.latencies)] }
        if !scenario.processes.isEmpty { blocks += ["### Processes", processTable(scenario.processes)] }
        for extra in scenario.tables {
            blocks += ["### \(Markdown.inline(extra.title))", table(extra)]
        }
        if let chart {
            blocks.append("![\(Markdown.inline(scenario.name)) over time](\(chart))")
        }
        if !scenario.checks.isEmpty { blocks += ["### Checks", checkTable(scenario.checks)] }
        if !scenario.notes.isEmpty {
            blocks += ["### Notes", scenario.notes.map { "- " + Markdown.inline($0) }.joined(separator: "\n")]
        }
        return blocks
    }

    /// One of a scenario's extra tables as Markdown (without its title), as the summary shows it.
    public static func table(_ table: ScenarioResult.Table) -> String {
        var rendered = MarkdownTable(table.columns.map { ($0, .left) })
        table.rows.forEach { rendered.append($0) }
        return rendered.rendered
    }

    private static func throughputTable(_ throughputs: [ScenarioResult.Throughput]) -> String {
        var table = MarkdownTable([("figure", .left), ("rate", .right), ("unit", .left), ("ratio to h2load ceiling", .right)])
        for throughput in throughputs {
            table.append([
                throughput.name, ReportNumbers.figure(throughput.value), throughput.unit,
                throughput.ceilingRatio.map { ReportNumbers.fixed($0) } ?? "",
            ])
        }
        return table.rendered
    }

    private static func latencyTable(_ latencies: [ScenarioResult.Latency]) -> String {
        let hasNotes = latencies.contains { $0.note != nil }
        var columns: [(String, MarkdownTable.Alignment)] = [
            ("figure", .left), ("samples", .right), ("p50", .right), ("p90", .right), ("p99", .right),
            ("p99.9", .right), ("max", .right),
        ]
        if hasNotes { columns.append(("note", .left)) }
        var table = MarkdownTable(columns)
        for latency in latencies {
            let s = latency.summary
            var cells = [latency.name, ReportNumbers.grouped(Double(s.count))]
            cells += [s.p50, s.p90, s.p99, s.p999, s.max].map { ReportNumbers.fixed($0) }
            if hasNotes { cells.append(latency.note ?? "") }
            table.append(cells)
        }
        return table.rendered
    }

    private static func processTable(_ processes: [ScenarioResult.ProcessUsage]) -> String {
        var table = MarkdownTable([("process", .left), ("CPU s", .right), ("CPU µs per op", .right), ("peak RSS MB", .right)])
        for process in processes {
            table.append([
                process.name, ReportNumbers.fixed(process.cpuSeconds),
                process.cpuMicrosecondsPerOperation.map { ReportNumbers.fixed($0) } ?? "",
                ReportNumbers.megabytes(process.peakRSSBytes),
            ])
        }
        return table.rendered
    }

    private static func checkTable(_ checks: [ScenarioResult.Check]) -> String {
        var table = MarkdownTable([("", .left), ("check", .left), ("measured", .right), ("target", .right)])
        for check in checks {
            let name = check.invalidReason.map { "\(check.name) (invalid: \($0))" } ?? check.name
            table.append([mark(check), name, measured(check), target(check)])
        }
        return table.rendered
    }

    private static func verdict(_ report: BenchmarkReport) -> String {
        let checks = report.allChecks
        let failed = checks.filter { $0.check.failed }
        let invalid = checks.filter { $0.check.invalidReason != nil }
        if checks.isEmpty { return "✅ **Passed** (no checks were run)." }
        if failed.isEmpty && invalid.isEmpty {
            return "✅ **Passed**: \(checks.count == 1 ? "the check" : "all \(checks.count) checks") passed."
        }
        if failed.isEmpty {
            let names = invalid.map { "\($0.scenario) / \($0.check.name)" }.joined(separator: ", ")
            return Markdown.inline("⚠️ **Passed, \(invalid.count) of \(checks.count) checks invalid** (the run could not measure them fairly; "
                                       + "see their notes): \(names).")
        }
        let names = failed.map { "\($0.scenario) / \($0.check.name)" }.joined(separator: ", ")
        return Markdown.inline("❌ **Failed**: \(failed.count) of \(checks.count) checks failed: \(names).")
    }

    private static func mark(_ check: ScenarioResult.Check) -> String {
        check.invalidReason != nil ? "⚠️" : check.passed ? "✅" : "❌"
    }

    private static func measured(_ check: ScenarioResult.Check) -> String {
        withUnit(ReportNumbers.figure(check.measured), check.unit)
    }

    private static func target(_ check: ScenarioResult.Check) -> String {
        withUnit("\(check.comparison.symbol) \(ReportNumbers.figure(check.target))", check.unit)
    }

    private static func withUnit(_ number: String, _ unit: String) -> String {
        unit.isEmpty ? number : "\(number) \(unit)"
    }
}
