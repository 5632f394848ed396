import Foundation
import LoadKit

/// The soak's figures and checks, as the report shows them and as the run prints them.
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

    private static func number(_ value: Int) -> String { ReportNumbers.grouped(Double(value)) }
    private static func number(_ value: Int64) -> String { ReportNumbers.grouped(Double(value)) }
    private static func seconds(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "–" }

    /// One line per check, printed as it is made.
    static func line(_ checkpoint: SoakCheckpoint) -> String {
        let segment = checkpoint.segment
        var text = String(format: "%@ at %.1f s: ", checkpoint.label, checkpoint.at)
        if let restart = checkpoint.restartSeconds { text += String(format: "restarted in %.2f s; ", restart) }
        text += "\(number(segment.eventsAcknowledged)) events acknowledged since the last check (\(segment.lostToKills) requests lost to the kill, "
            + "\(segment.storeUnavailable) refused 503 store_unavailable, \(segment.unexpected) unexpected); "
            + "\(number(checkpoint.eventsVerified)) of \(number(checkpoint.eventsAcknowledged)) acknowledged events verified "
            + "(\(checkpoint.unacknowledgedStored) stored unacknowledged); APNs channels \(checkpoint.apns.summary)"
            + (checkpoint.apnsSettledSeconds.map { String(format: " after %.2f s", $0) } ?? " (never settled)")
            + "; jobs done \(checkpoint.jobsDone) of \(checkpoint.jobsPosted); \(number(checkpoint.devicePushesAccepted)) device pushes accepted; "
            + "\(checkpoint.slowClientsCut) slow clients cut"
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
            lines.append("\(check.passed ? "ok    " : "FAILED") \(check.name): \(String(format: "%.2f", check.measured)) (target \(check.comparison.symbol) \(check.target))")
        }
        return lines
    }

    var result: ScenarioResult {
        let jobs = final.jobs
        let stored = jobs.filter { if case .stored = $0.job.post { return true } else { return false } }
        let churned = ledger.channels.values.filter(\.churned)
        let cutTotal = cuts.reduce(0) { $0 + $1.cuts.count + $1.neverCut }, onTime = cuts.reduce(0) { $0 + $1.onTime }
        let disk = checkpoints.first { $0.label == "disk full" }
        let leaks = checkpoints.reduce(0) { $0 + $1.apns.leaked.count + $1.apns.missing.count } + final.apns.leaked.count + final.apns.missing.count
        let gone = final.endedChannels + final.deletedChannels
        var checks: [ScenarioResult.Check] = [
            .init(name: "acknowledged events missing after a restart", measured: Double(checkpoints.reduce(0) { $0 + $1.acknowledgedMissing }),
                  target: 0, comparison: .atMost),
            .init(name: "channels holding events never sent, or a state not of their lastSeq",
                  measured: Double(checkpoints.reduce(0) { $0 + $1.inconsistentChannels }), target: 0, comparison: .atMost),
            .init(name: "answers breaking the API (a 202 below its batch, no id)", measured: Double(tally.violations.count), target: 0, comparison: .atMost),
            .init(name: "channels in a life their acknowledged requests rule out", measured: Double(checkpoints.reduce(0) { $0 + $1.lifeProblems.count }),
                  target: 0, comparison: .atMost),
            .init(name: "APNs channels leaked or missing (every check, and the end)", measured: Double(leaks), target: 0, comparison: .atMost),
            .init(name: "channels given a second APNs channel", measured: Double(ledger.replacedAPNsIDs.count), target: 0, comparison: .atMost),
            .init(name: "ended and deleted channels gone at APNs", measured: gone == 0 ? 0 : Double(final.endedGone + final.deletedGone) / Double(gone),
                  target: 1, comparison: .atLeast),
            .init(name: "stored personal jobs done", measured: stored.isEmpty ? 0 : Double(stored.count { $0.counts?.status == "done" }) / Double(stored.count),
                  target: 1, comparison: .atLeast),
            .init(name: "personal jobs with inexact counts, tokens not reached, or a second job",
                  measured: Double(jobs.count { !$0.audit.isExact } + final.unmatchedJobs.count), target: 0, comparison: .atMost),
            .init(name: "every APNs request recorded (per-token counts whole)", measured: recordingFull ? 0 : 1, target: 1, comparison: .atLeast),
            .init(name: "real requests failed outside the faults", measured: Double(tally.unexpectedTotal), target: 0, comparison: .atMost),
            .init(name: "slow clients cut on time (each kind cut)",
                  measured: cuts.contains { $0.cuts.isEmpty } || cutTotal == 0 ? 0 : Double(onTime) / Double(cutTotal), target: 1, comparison: .atLeast),
        ]
        if options.diskSeconds > 0 {
            checks.append(.init(name: "writes refused while the disk was full (503 store_unavailable)", measured: Double(disk?.segment.storeUnavailable ?? 0),
                                target: 1, comparison: .atLeast))
        }
        let answered = LatencyHistogram(milliseconds: tally.answeredMilliseconds).summary
        let restarts = LatencyHistogram(milliseconds: checkpoints.compactMap(\.restartSeconds).map { $0 * 1000 }).summary
        let acknowledged = checkpoints.reduce(0) { $0 + $1.segment.eventsAcknowledged }
        let series = tally.series
        return ScenarioResult(
            name: Soak.name,
            description: "events, channel creates, ends and deletes and personal jobs under load while the gateway is killed with kill -9 at "
                + "random moments, its disk filled and freed, and slow clients attached; every 202 checked after each restart",
            parameters: [.init(name: "seconds", value: String(format: "%.0f", options.seconds)), .init(name: "kills", value: String(schedule.kills)),
                         .init(name: "disk full", value: options.diskSeconds > 0 ? String(format: "%.0f s (%@)", options.diskSeconds, diskMode.rawValue) : "no"),
                         .init(name: "seed", value: String(options.seed)), .init(name: "channels", value: String(options.channels)),
                         .init(name: "tokens per job", value: String(options.tokens)),
                         .init(name: "slow clients per kind", value: String(options.slowClientsPerKind)),
                         .init(name: "http deadlines head / body / idle", value: String(format: "%.0f / %.0f / %.0f s", options.deadlines.head,
                                                                                       options.deadlines.body, options.deadlines.idle)),
                         .init(name: "APNs latency", value: "\(options.apnsLatencyMilliseconds) ms"),
                         .init(name: "fault moments", value: schedule.moments.map { moment in
                             switch moment.fault {
                             case .kill: String(format: "kill at %.1f s", moment.at)
                             case .diskFull(let seconds): String(format: "disk full at %.1f s for %.0f s", moment.at, seconds)
                             }
                         }.joined(separator: ", "))],
            durationSeconds: seconds,
            throughputs: [.init(name: "events acknowledged", unit: "events/s", value: Double(acknowledged) / options.seconds),
                          .init(name: "device pushes accepted at APNs", unit: "pushes/s",
                                value: Double(checkpoints.last?.devicePushesAccepted ?? 0) / options.seconds)],
            latencies: [.init(name: "request → answer, answered requests", summary: answered, note: "every real client's request answered with success"),
                        .init(name: "gateway restart, kill → /readyz 200", summary: restarts)],
            tables: [checkpointTable, jobTable, channelTable, slowClientTable] + (episode.map { [diskTable($0, refused: disk?.segment.storeUnavailable ?? 0)] } ?? [])
                + (problemTable.map { [$0] } ?? []),
            series: [.init(name: "events acknowledged", unit: "events/s", kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 1, values: series.events)),
                     .init(name: "refused 503 store_unavailable", unit: "requests/s", kind: .throughput,
                           timeSeries: TimeSeries(intervalSeconds: 1, values: series.refused)),
                     .init(name: "lost to kills", unit: "requests/s", kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 1, values: series.lost))],
            checks: checks,
            notes: [
                "Channels churned: \(churned.count) (\(final.endedChannels) ended, \(final.deletedChannels) deleted); APNs creates \(final.creates), "
                    + "deletes \(final.deletes), list-all calls \(final.lists); lost creates adopted after a restart: \(adoptions).",
                String(format: "The personal queue was idle %@ after the load stopped.", final.jobsSettledSeconds.map { String(format: "%.1f s", $0) } ?? "never"),
            ] + tally.unexpectedExamples.prefix(5).map { "Unexpected: \($0)" })
    }

    private var checkpointTable: ScenarioResult.Table {
        .init(title: "Checks after each fault", columns: ["check", "at s", "restart s", "requests", "events acknowledged", "lost to the kill",
                                                          "503 store_unavailable", "503 reconciling", "unexpected", "events verified / acknowledged",
                                                          "stored unacknowledged", "slow clients cut", "channels at APNs / expected", "settled s",
                                                          "jobs done / posted", "device pushes accepted"],
              rows: checkpoints.map { c in
                  [c.label, String(format: "%.1f", c.at), Self.seconds(c.restartSeconds), Self.number(c.segment.requests), Self.number(c.segment.eventsAcknowledged),
                   String(c.segment.lostToKills), String(c.segment.storeUnavailable), String(c.segment.reconciling), String(c.segment.unexpected),
                   "\(Self.number(c.eventsVerified)) / \(Self.number(c.eventsAcknowledged))", Self.number(c.unacknowledgedStored), String(c.slowClientsCut),
                   c.apns.summary, Self.seconds(c.apnsSettledSeconds), "\(c.jobsDone) / \(c.jobsPosted)", Self.number(c.devicePushesAccepted)]
              })
    }

    private var jobTable: ScenarioResult.Table {
        .init(title: "Personal jobs", columns: ["job", "via", "post", "targeted", "sent", "failed", "expired", "pending", "tokens reached", "duplicates", "verdict"],
              rows: final.jobs.map { row in
                  let post = switch row.job.post {
                  case .stored: "202"
                  case .lost: row.id == nil ? "lost, not stored" : "lost, stored"
                  }
                  let counts = row.counts
                  return [String(row.job.number), row.job.viaKickoff ? "kickoff" : "personal", post, counts.map { String($0.targeted) } ?? "–",
                          counts.map { String($0.sent) } ?? "–", counts.map { $0.failed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") } ?? "–",
                          counts.map { String($0.expired) } ?? "–", counts.map { String($0.pending) } ?? "–", String(row.audit.tokensReached),
                          String(row.audit.duplicates), row.audit.isExact ? "exact" : row.audit.problems.joined(separator: "; ")]
              })
    }

    private var channelTable: ScenarioResult.Table {
        let channels = ledger.channels.values
        let withAPNs = channels.count { $0.apnsID != nil }
        let rows: [(String, String)] = [
            ("channels created (events all run + churned)", "\(channels.count { !$0.churned }) + \(channels.count(where: \.churned))"),
            ("churned channels kept / ended / deleted", "\(channels.count { $0.churned && $0.life == .active }) / \(final.endedChannels) / \(final.deletedChannels)"),
            ("APNs creates (mock, 201) / channels given an APNs id", "\(final.creates) / \(withAPNs)"),
            ("APNs deletes (mock, 204) / channels ended or deleted", "\(final.deletes) / \(final.endedChannels + final.deletedChannels)"),
            ("lost creates adopted after a restart (gateway log)", String(adoptions)),
            ("APNs channels at the end / expected", final.apns.summary),
            ("channels given a second APNs channel", ledger.replacedAPNsIDs.isEmpty ? "0" : ledger.replacedAPNsIDs.prefix(3).joined(separator: "; ")),
            ("ended channels deleted at APNs", "\(final.endedGone) of \(final.endedChannels)"),
            ("deleted channels gone at APNs", "\(final.deletedGone) of \(final.deletedChannels)"),
        ]
        return .init(title: "Channels", columns: ["figure", "count"], rows: rows.map { [$0.0, $0.1] })
    }

    private var slowClientTable: ScenarioResult.Table {
        .init(title: "Slow clients", columns: ["client", "deadline s", "cut", "on time", "with 408", "cut after s, min / median / max", "lost to kills",
                                               "off time or never cut", "cut at s (first 8)"],
              rows: cuts.map { kind in
                  let spread = kind.spread
                  return [kind.kind, String(format: "%.0f", kind.deadlineSeconds), String(kind.cuts.count), String(kind.onTime),
                          String(kind.cuts.count { $0.status == 408 }), String(format: "%.2f / %.2f / %.2f", spread.min, spread.median, spread.max),
                          String(kind.lostToKills), String(kind.offTime), kind.cuts.prefix(8).map { String(format: "%.1f", $0.at) }.joined(separator: ", ")]
              })
    }

    private func diskTable(_ episode: SoakDiskEpisode, refused: Int) -> ScenarioResult.Table {
        .init(title: "Disk full", columns: ["disk", "/readyz not writable after s", "first write refused after s", "held s", "requests refused 503",
                                            "recovered after freeing, s"],
              rows: [[episode.mode == .tmpfs ? "tmpfs filled by a filler file" : "fault file (TOUCHLINE_STORE_FAULT_FILE)",
                      Self.seconds(episode.notWritableAfter), Self.seconds(episode.refusedAfter), Self.seconds(episode.heldSeconds), String(refused),
                      Self.seconds(episode.recoverySeconds)]])
    }

    /// Everything found wrong, one row each (the first 40).
    private var problemTable: ScenarioResult.Table? {
        var rows: [[String]] = []
        for checkpoint in checkpoints {
            rows += (checkpoint.eventProblems + checkpoint.lifeProblems).map { [checkpoint.label, $0] }
            if !checkpoint.apns.matches { rows.append([checkpoint.label, "APNs channels \(checkpoint.apns.summary)"]) }
        }
        rows += tally.violations.map { ["answers", $0] }
        rows += ledger.replacedAPNsIDs.map { ["APNs ids", $0] }
        rows += final.deletionProblems.map { ["deletions", $0] }
        rows += final.jobs.filter { !$0.audit.isExact }.map { ["job \($0.job.number)", $0.audit.problems.joined(separator: "; ")] }
        rows += final.unmatchedJobs.map { ["jobs", "job \($0) ran, matching no post"] }
        if !final.apns.matches { rows.append(["end", "APNs channels \(final.apns.summary)"]) }
        rows += tally.unexpectedExamples.map { ["unexpected", $0] }
        return rows.isEmpty ? nil : .init(title: "Problems found", columns: ["where", "what"], rows: Array(rows.prefix(40)))
    }
}
