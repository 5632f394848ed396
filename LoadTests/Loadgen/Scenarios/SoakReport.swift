import Foundation
import LoadKit
import Measurements

/// The soak's figures and checks, as the report shows them and as the run prints them. Its
/// checks are in `SoakReportChecks.swift`, its tables in `SoakReportTables.swift`.
struct SoakReport {
    let options: Soak.Options
    let schedule: SoakSchedule
    let diskMode: DiskFault.Mode
    let checkpoints: [SoakCheckpoint]
    let episode: SoakDiskEpisode?
    let final: SoakFinalAudit
    let cuts: [SlowClientCuts]
    let ledger: SoakLedger
    let tally: SoakTally
    /// Lost creates whose APNs channel a restart adopted (the gateway's log).
    let adoptions: Int
    let recordingFull: Bool
    let seconds: Double

    static func number(_ value: Int) -> String { ReportNumbers.grouped(Double(value)) }
    static func number(_ value: Int64) -> String { ReportNumbers.grouped(Double(value)) }
    static func seconds(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "–" }

    /// One line per check, printed as it is made.
    static func line(_ checkpoint: SoakCheckpoint) -> String {
        let segment = checkpoint.segment
        var text = String(format: "%@ at %.1f s: ", checkpoint.label, checkpoint.at)
        if let restart = checkpoint.restartSeconds { text += String(format: "restarted in %.2f s; ", restart) }
        text += "\(number(segment.eventsAcknowledged)) events acknowledged since the last check (\(segment.lostToKills) requests lost to "
            + "the kill, \(segment.storeUnavailable) refused 503 store_unavailable, \(segment.unexpected) unexpected); "
            + "\(number(checkpoint.eventsVerified)) of \(number(checkpoint.eventsAcknowledged)) acknowledged events verified "
            + "(\(checkpoint.unacknowledgedStored) stored unacknowledged); APNs channels \(checkpoint.apns.summary)"
            + (checkpoint.apnsSettledSeconds.map { String(format: " after %.2f s", $0) } ?? " (never settled)")
            + "; jobs done \(checkpoint.jobsDone) of \(checkpoint.jobsPosted); \(number(checkpoint.devicePushesAccepted)) device pushes "
            + "accepted; \(checkpoint.slowClientsCut) slow clients cut"
        let problems = checkpoint.eventProblems + checkpoint.lifeProblems
        if !problems.isEmpty { text += "; PROBLEMS: " + problems.prefix(5).joined(separator: "; ") }
        return text
    }

    /// The tables and checks, as printed at the end of the run.
    static func printed(_ result: ScenarioResult) -> [String] {
        var lines: [String] = []
        for table in result.tables {
            lines += ["", table.title + ":"] + MarkdownReport.table(table).split(separator: "\n").map(String.init)
        }
        lines.append("")
        for check in result.checks {
            lines.append("\(check.passed ? "ok    " : "FAILED") \(check.name): \(String(format: "%.2f", check.measured)) "
                         + "(target \(check.comparison.symbol) \(check.target))")
        }
        return lines
    }

    var result: ScenarioResult {
        let acknowledged = checkpoints.reduce(0) { $0 + $1.segment.eventsAcknowledged }
        let restarts = checkpoints.compactMap(\.restartSeconds).map { $0 * 1000 }
        let series = tally.series
        func perSecond(_ name: String, _ unit: String, _ values: [Double]) -> ScenarioResult.Series {
            .init(name: name, unit: unit, kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 1, values: values))
        }
        return ScenarioResult(
            name: Soak.name,
            description: "events, channel creates, ends and deletes and personal jobs under load while the gateway is killed with kill -9 at "
                + "random moments, its disk filled and freed, and slow clients attached; every 202 checked after each restart",
            parameters: parameters,
            durationSeconds: seconds,
            throughputs: [.init(name: "events acknowledged", unit: "events/s", value: Double(acknowledged) / options.seconds),
                          .init(name: "device pushes accepted at APNs", unit: "pushes/s",
                                value: Double(checkpoints.last?.devicePushesAccepted ?? 0) / options.seconds)],
            latencies: [.init(name: "request → answer, answered requests", summary: LatencyHistogram(milliseconds: tally.answeredMilliseconds).summary,
                              note: "every real client's request answered with success"),
                        .init(name: "gateway restart, kill → /readyz 200", summary: LatencyHistogram(milliseconds: restarts).summary)],
            tables: tables,
            series: [perSecond("events acknowledged", "events/s", series.events),
                     perSecond("refused 503 store_unavailable", "requests/s", series.refused),
                     perSecond("lost to kills", "requests/s", series.lost)],
            checks: checks,
            notes: [
                "Channels churned: \(ledger.channels.values.count(where: \.churned)) (\(final.endedChannels) ended, \(final.deletedChannels) "
                    + "deleted); APNs creates \(final.creates), deletes \(final.deletes), list-all calls \(final.lists); lost creates adopted "
                    + "after a restart: \(adoptions).",
                "The personal queue was idle \(final.jobsSettledSeconds.map { String(format: "%.1f s", $0) } ?? "never") after the load stopped.",
            ] + tally.unexpectedExamples.prefix(5).map { "Unexpected: \($0)" })
    }

    private var parameters: [ScenarioResult.Parameter] {
        let deadlines = options.deadlines
        let moments = schedule.moments.map { moment in
            switch moment.fault {
            case .kill: String(format: "kill at %.1f s", moment.at)
            case .diskFull(let seconds): String(format: "disk full at %.1f s for %.0f s", moment.at, seconds)
            }
        }
        return [.init(name: "seconds", value: String(format: "%.0f", options.seconds)), .init(name: "kills", value: String(schedule.kills)),
                .init(name: "disk full", value: options.diskSeconds > 0 ? String(format: "%.0f s (%@)", options.diskSeconds, diskMode.rawValue) : "no"),
                .init(name: "seed", value: String(options.seed)), .init(name: "channels", value: String(options.channels)),
                .init(name: "tokens per job", value: String(options.tokens)),
                .init(name: "slow clients per kind", value: String(options.slowClientsPerKind)),
                .init(name: "http deadlines head / body / idle", value: String(format: "%.0f / %.0f / %.0f s", deadlines.head, deadlines.body, deadlines.idle)),
                .init(name: "APNs latency", value: "\(options.apnsLatencyMilliseconds) ms"),
                .init(name: "fault moments", value: moments.joined(separator: ", "))]
    }
}
