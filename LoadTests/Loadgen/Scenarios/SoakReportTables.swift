import LoadKit

/// The soak's figures as tables: per check after a fault, per personal job, the channels, the
/// slow clients, the disk episode, and everything found wrong.
extension SoakReport {
    var tables: [ScenarioResult.Table] {
        let refused = checkpoints.first { $0.label == "disk full" }?.segment.storeUnavailable ?? 0
        return [checkpointTable, jobTable, channelTable, slowClientTable] + (episode.map { [diskTable($0, refused: refused)] } ?? [])
            + (problemTable.map { [$0] } ?? [])
    }

    private var checkpointTable: ScenarioResult.Table {
        .init(title: "Checks after each fault",
              columns: ["check", "at s", "restart s", "requests", "events acknowledged", "lost to the kill", "503 store_unavailable",
                        "503 reconciling", "unexpected", "events verified / acknowledged", "stored unacknowledged", "slow clients cut",
                        "channels at APNs / expected", "settled s", "jobs done / posted", "device pushes accepted"],
              rows: checkpoints.map { c in
                  let segment = c.segment
                  return [c.label, String(format: "%.1f", c.at), Self.seconds(c.restartSeconds), Self.number(segment.requests),
                          Self.number(segment.eventsAcknowledged), String(segment.lostToKills), String(segment.storeUnavailable),
                          String(segment.reconciling), String(segment.unexpected), "\(Self.number(c.eventsVerified)) / \(Self.number(c.eventsAcknowledged))",
                          Self.number(c.unacknowledgedStored), String(c.slowClientsCut), c.apns.summary, Self.seconds(c.apnsSettledSeconds),
                          "\(c.jobsDone) / \(c.jobsPosted)", Self.number(c.devicePushesAccepted)]
              })
    }

    private var jobTable: ScenarioResult.Table {
        .init(title: "Personal jobs",
              columns: ["job", "via", "post", "targeted", "sent", "failed", "expired", "pending", "tokens reached", "duplicates", "verdict"],
              rows: final.jobs.map { row in
                  let post = switch row.job.post {
                  case .stored: "202"
                  case .lost: row.id == nil ? "lost, not stored" : "lost, stored"
                  }
                  func count(_ value: (SoakJobAudit.Counts) -> String) -> String { row.counts.map(value) ?? "–" }
                  return [String(row.job.number), row.job.viaKickoff ? "kickoff" : "personal", post, count { String($0.targeted) },
                          count { String($0.sent) }, count { $0.failed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") },
                          count { String($0.expired) }, count { String($0.pending) }, String(row.audit.tokensReached), String(row.audit.duplicates),
                          row.audit.isExact ? "exact" : row.audit.problems.joined(separator: "; ")]
              })
    }

    private var channelTable: ScenarioResult.Table {
        let channels = ledger.channels.values
        let kept = channels.count { $0.churned && $0.life == .active }
        let rows: [(String, String)] = [
            ("channels created (events all run + churned)", "\(channels.count { !$0.churned }) + \(channels.count(where: \.churned))"),
            ("churned channels kept / ended / deleted", "\(kept) / \(final.endedChannels) / \(final.deletedChannels)"),
            ("APNs creates (mock, 201) / channels given an APNs id", "\(final.creates) / \(channels.count { $0.apnsID != nil })"),
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
        .init(title: "Slow clients", columns: ["client", "deadline s", "cut", "on time", "with 408", "cut after s, min / median / max",
                                               "lost to kills", "off time or never cut", "cut at s (first 8)"],
              rows: cuts.map { kind in
                  let spread = kind.spread
                  return [kind.kind, String(format: "%.0f", kind.deadlineSeconds), String(kind.cuts.count), String(kind.onTime),
                          String(kind.cuts.count { $0.status == 408 }), String(format: "%.2f / %.2f / %.2f", spread.min, spread.median, spread.max),
                          String(kind.lostToKills), String(kind.offTime), kind.cuts.prefix(8).map { String(format: "%.1f", $0.at) }.joined(separator: ", ")]
              })
    }

    private func diskTable(_ episode: SoakDiskEpisode, refused: Int) -> ScenarioResult.Table {
        .init(title: "Disk full", columns: ["disk", "/readyz not writable after s", "first write refused after s", "held s",
                                            "requests refused 503", "recovered after freeing, s"],
              rows: [[episode.mode == .tmpfs ? "tmpfs filled by a filler file" : "fault file (TOUCHLINE_STORE_FAULT_FILE)",
                      Self.seconds(episode.notWritableAfter), Self.seconds(episode.refusedAfter), Self.seconds(episode.heldSeconds),
                      String(refused), Self.seconds(episode.recoverySeconds)]])
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
        if !final.apns.matches { rows.append(["final audit", "APNs channels \(final.apns.summary)"]) }
        rows += tally.unexpectedExamples.map { ["unexpected", $0] }
        return rows.isEmpty ? nil : .init(title: "Problems found", columns: ["where", "what"], rows: Array(rows.prefix(40)))
    }
}
