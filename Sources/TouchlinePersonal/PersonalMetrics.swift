import APNs
import TouchlineCore

/// What the personal queue counts for metrics: tokens deactivated, dead letters by reason, and
/// the retries of finished jobs (running jobs keep theirs in their own counters), plus the APNs
/// figures of the personal pool.
///
/// Loop-confined to the personal loop with ``PersonalDispatcher``; the ingest loop reads
/// it through the dispatcher's `metricsSnapshot()` with `execute` (`@unchecked Sendable` only for
/// that hand-off).
final class PersonalMetrics: @unchecked Sendable {
    let apns: APNsMetrics
    /// Registry tokens deactivated after a 410, as counted by the store at each save's commit
    /// (not the 410s: a re-registered or already inactive token is not deactivated).
    var tokensDeactivated = 0
    var deadLetters: [String: Int] = [:]
    /// Audience tokens left out of kickoffs because their device was started into that channel already.
    var startsLeftOut = 0
    private var retriesOfFinishedJobs = 0

    init(app: String = AppChannelID.defaultApp, apns dispatch: any PersonalAPNsDispatch, credentialsRejected: (@Sendable (String, String) -> Void)? = nil) {
        apns = APNsMetrics(app: app, apns: dispatch, pushPool: "personal", kind: .device, managementPool: nil,
                                  credentialsRejected: credentialsRejected)
    }

    func deadLettered(reason: String) { deadLetters[reason, default: 0] += 1 }

    func jobFinished(_ job: FanOutJob) { retriesOfFinishedJobs += job.counters.retries }

    /// The figures now, given the running jobs and the sends in flight (on the personal loop).
    func snapshot(running: [FanOutJob], inFlight: Int) -> PersonalSnapshot {
        PersonalSnapshot(jobsRunning: running.count, targetsPending: running.reduce(0) { $0 + $1.counters.pending },
                                inFlight: inFlight, tokensDeactivated: tokensDeactivated, deadLetters: deadLetters,
                                retries: retriesOfFinishedJobs + running.reduce(0) { $0 + $1.counters.retries }, startsLeftOut: startsLeftOut,
                                apns: apns.snapshot())
    }
}

/// The personal queue's figures at one moment, carried to the ingest loop.
package struct PersonalSnapshot: Sendable {
    /// Jobs with a run here (a cluster's job counts once, however many of its slices run here).
    package var jobsRunning: Int
    /// On a cluster: slices of the cluster's jobs running here, and started here since the start.
    package var slicesRunning = 0
    package var slicesStarted = 0
    /// Targets fetched from the audience that have not ended yet, over the running jobs.
    package var targetsPending: Int
    package var inFlight: Int
    package var tokensDeactivated: Int
    package var deadLetters: [String: Int]
    package var retries: Int
    package var startsLeftOut: Int
    package var apns: APNsSnapshot
}
