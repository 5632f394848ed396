import LoadKit
import Testing

@Suite struct MarkdownReportTests {
    let summary = MarkdownReport.summary(ReportFixtures.report(), chartLinks: ["matchday": "matchday.svg"])

    @Test func theHeaderNamesDateMachineAndTool() {
        #expect(summary.hasPrefix("# Touchline load report\n"))
        #expect(summary.contains("2026-11-30 15:04 UTC on AMD EPYC 7B13, 2 CPUs, 7.8 GiB, Debian GNU/Linux 12 (bookworm), Linux 6.1.0-28-amd64; touchline-load 0.6.0.\n\nVerdict: ❌ **Failed**: 1 of 3 checks failed"))
    }

    @Test func eachScenarioHasItsHeadingDescriptionAndParameters() {
        #expect(summary.contains("## matchday\n\n300 concurrent matches with clock ticks, stats, goals and a final whistle."))
        #expect(summary.contains("Parameters: matches = 300, duration = 60 s; measured phase 60.0 s."))
        #expect(summary.contains("## ingest-burst\n\nMaximum durable ingest rate.\n\nParameters: none; measured phase 20.0 s."))
    }

    @Test func throughputsShowGroupedRatesAndCeilingRatios() {
        #expect(summary.contains("| figure | rate | unit | ratio to h2load ceiling |"))
        #expect(summary.contains("| pushes sent | 135,377 | pushes/s | 0.91 |"))
        #expect(summary.contains("| events ingested | 12,346 | events/s |  |"))
        #expect(summary.contains("| events committed | 48,000 | events/s | 0.35 |"))
    }

    @Test func latenciesShowPercentilesInMillisecondsWithTheirNote() {
        #expect(summary.contains("| figure | samples | p50 | p90 | p99 | p99.9 | max | note |"))
        #expect(summary.contains("| ingest to APNs | 740,000 | 1.23 | 2.50 | 4.57 | 9.10 | 31.25 | includes coalescing delay |"))
    }

    @Test func processesExtraTablesChartsAndNotesAreShown() {
        #expect(summary.contains("| gateway | 42.50 | 6.25 | 125.3 |"))
        #expect(summary.contains("### APNs responses by status\n\n| status | count |\n|---|---|\n| 200 | 740,000 |\n| 429 | 12 |"))
        #expect(summary.contains("![matchday over time](matchday.svg)"))
        #expect(summary.contains("### Notes\n\n- The machine was otherwise quiet."))
    }

    @Test func checksAreMarkedAndTheVerdictNamesTheFailures() {
        #expect(summary.contains("| ✅ | push ratio to ceiling | 0.91 | ≥ 0.80 |"))
        #expect(summary.contains("| ❌ | ingest ratio to ceiling | 0.35 | ≥ 0.50 |"))
        #expect(summary.contains("| ✅ | p99 commit latency | 12.50 ms | ≤ 20.00 ms |"))
        #expect(summary.hasSuffix("## Verdict\n\n❌ **Failed**: 1 of 3 checks failed: ingest-burst / ingest ratio to ceiling.\n"))
    }

    @Test func aPassingRunSaysSo() {
        let passing = MarkdownReport.summary(ReportFixtures.report([ReportFixtures.matchday]))
        #expect(passing.hasSuffix("## Verdict\n\n✅ **Passed**: the check passed.\n"))
        #expect(!passing.contains("❌"))
        #expect(!passing.contains("!["))
        #expect(MarkdownReport.summary(ReportFixtures.report([])).contains("Verdict: ✅ **Passed** (no checks were run)."))
    }

    /// A check the run could not measure fairly is shown as invalid with its reason, and fails
    /// neither the verdict nor `--check`; a failed check beside it still fails the run.
    @Test func anInvalidCheckIsShownWithItsReasonAndFailsNothing() {
        var matchday = ReportFixtures.matchday
        matchday.checks.append(.init(name: "p99 / machine noise", measured: 14, target: 10, comparison: .atMost)
            .invalid(when: true, because: "the load generator started sends late by p99 600.0 ms, over 20 ms"))
        #expect(matchday.passed && !matchday.checks[1].passed && !matchday.checks[1].failed)
        let summary = MarkdownReport.summary(ReportFixtures.report([matchday]))
        #expect(summary.contains("| ⚠️ | p99 / machine noise (invalid: the load generator started sends late by p99 600.0 ms, over 20 ms) | 14.00 | ≤ 10.00 |"))
        #expect(summary.hasSuffix("⚠️ **Passed, 1 of 2 checks invalid** (the run could not measure them fairly; see their notes): "
                                  + "matchday / p99 / machine noise.\n"))
        #expect(!ReportFixtures.report([matchday, ReportFixtures.ingestBurst]).passed)
        let untouched = ScenarioResult.Check(name: "ratio", measured: 0.5, target: 1, comparison: .atLeast).invalid(when: false, because: "x")
        #expect(untouched.invalidReason == nil && untouched.failed)
    }

    @Test func cellsCannotBreakTheTable() {
        var scenario = ReportFixtures.ingestBurst
        scenario.throughputs[0].name = "a|b\nc <d>"
        let text = MarkdownReport.summary(ReportFixtures.report([scenario]))
        #expect(text.contains(#"| a\|b c &lt;d> | 48,000 |"#))
    }

    @Test func theStandardTableHasOneRowPerHeadline() {
        let table = MarkdownReport.standardTable(ReportFixtures.report())
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines.first == "Measured 2026-11-30 15:04 UTC on AMD EPYC 7B13, 2 CPUs, 7.8 GiB, Debian GNU/Linux 12 (bookworm), Linux 6.1.0-28-amd64; touchline-load 0.6.0.")
        #expect(lines[1] == "| scenario | figure | measured | target | ratio |")
        // matchday: 2 throughputs + 1 latency + 1 check; ingest-burst: 1 throughput + 2 checks.
        #expect(lines.count == 2 + 1 + 7)
        #expect(lines.contains("| matchday | pushes sent | 135,377 pushes/s |  | 0.91 |"))
        #expect(lines.contains("| matchday | ingest to APNs p50 / p99 | 1.23 / 4.57 ms |  |  |"))
        #expect(lines.contains("| matchday | push ratio to ceiling | 0.91 | ≥ 0.80 ✅ |  |"))
        #expect(lines.contains("| ingest-burst | ingest ratio to ceiling | 0.35 | ≥ 0.50 ❌ |  |"))
        #expect(lines.contains("| ingest-burst | p99 commit latency | 12.50 ms | ≤ 20.00 ms ✅ |  |"))
    }
}
