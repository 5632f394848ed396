import LoadKit

/// What a soak run is held to (`--check`). Counts of what went wrong have a target of 0; shares
/// of what must always happen a target of 1, measured as 0 when the run gave it nothing to do
/// (a check that nothing exercised has not passed).
extension SoakReport {
    var checks: [ScenarioResult.Check] {
        func none(_ name: String, _ count: Int) -> ScenarioResult.Check {
            .init(name: name, measured: Double(count), target: 0, comparison: .atMost)
        }
        func all(_ name: String, _ done: Int, of total: Int) -> ScenarioResult.Check {
            .init(name: name, measured: total == 0 ? 0 : Double(done) / Double(total), target: 1, comparison: .atLeast)
        }
        let stored = final.jobs.filter { if case .stored = $0.job.post { true } else { false } }
        let apnsProblems = (checkpoints.map(\.apns) + [final.apns]).reduce(0) { $0 + $1.leaked.count + $1.missing.count }
        let cutOrDue = cuts.reduce(0) { $0 + $1.cuts.count + $1.neverCut }
        var checks = [
            none("acknowledged events missing after a restart", Int(checkpoints.reduce(0) { $0 + $1.acknowledgedMissing })),
            none("channels holding events never sent, or a state not of their lastSeq", checkpoints.reduce(0) { $0 + $1.inconsistentChannels }),
            none("answers breaking the API (a 202 below its batch, no id)", tally.violations.count),
            none("channels in a life their acknowledged requests rule out", checkpoints.reduce(0) { $0 + $1.lifeProblems.count }),
            none("APNs channels leaked or missing (every check, and the end)", apnsProblems),
            none("channels given a second APNs channel", ledger.replacedAPNsIDs.count),
            all("ended and deleted channels gone at APNs", final.endedGone + final.deletedGone, of: final.endedChannels + final.deletedChannels),
            all("stored personal jobs done", stored.count { $0.counts?.status == "done" }, of: stored.count),
            none("personal jobs with inexact counts, tokens not reached, or a second job",
                 final.jobs.count { !$0.audit.isExact } + final.unmatchedJobs.count),
            all("every APNs request recorded (per-token counts whole)", recordingFull ? 0 : 1, of: 1),
            none("real requests failed outside the faults", tally.unexpectedTotal),
            // Every kind must have been cut at least once, or its deadline was never tried.
            all("slow clients cut on time (each kind cut)", cuts.contains { $0.cuts.isEmpty } ? 0 : cuts.reduce(0) { $0 + $1.onTime }, of: cutOrDue),
        ]
        if options.diskSeconds > 0 {
            let refused = checkpoints.first { $0.label == "disk full" }?.segment.storeUnavailable ?? 0
            checks.append(.init(name: "writes refused while the disk was full (503 store_unavailable)", measured: Double(refused), target: 1,
                                comparison: .atLeast))
        }
        return checks
    }
}
