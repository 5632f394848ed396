import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Where new personal jobs are kept and run, as the backend supplies it (``StartedBackend``).
///
/// A gateway on its own keeps every job in its personal file and runs it in its app's queue
/// (``OwnJobs``: nothing beyond the queues). A cluster gateway keeps new jobs in the cluster's
/// job bucket, whose slices run at the owners of their partitions, whichever gateway took the
/// request (the cluster's board, docs/cluster.md "Personal jobs on the cluster"); the jobs of
/// its own file (stored before it joined) still run in its queues. The intake stores through
/// it (on the ingest loop); the queues save slices and look scheduled starts up through it (on
/// the personal loop).
package protocol PersonalJobBoard: AnyObject, Sendable {
    // MARK: The intake's side (ingest loop)

    /// Whether a request's `Idempotency-Key` names its jobs (``IdempotencyClaim/jobID(index:)``):
    /// a repeat sent to any gateway then finds the same jobs.
    var namesJobsByKey: Bool { get }
    /// Stores a rollover's start jobs, each once (some may be stored already: a restart in the
    /// middle of a rollover), and runs them; `completion` on the intake's loop with whether
    /// they are all stored.
    func storeRolloverStarts(_ jobs: [PersonalJobRecord], through intake: PersonalJobIntake,
                             completion: @escaping @Sendable (Bool) -> Void)
    /// Stores `jobs` with `operations` (for this gateway's file), answers `request` (202 with
    /// `answer` once stored, else the failure) and runs them; `settled` as
    /// ``PersonalJobIntake/submitPersonalJobs(_:with:for:answer:idempotency:settled:)`` says.
    func store(_ jobs: [PersonalJobRecord], then operations: [TokenOperation], through intake: PersonalJobIntake, for request: HTTPRequest,
               answer: JSONValue, idempotency claim: IdempotencyClaim?, settled: (@Sendable (_ stored: Bool) -> Void)?)
    /// A job's progress as the board holds it (nil: not held here, read this gateway's file),
    /// and why it cannot run if it is broken; `completion` on `answerLoop`.
    func progress(of jobID: String, answerLoop: EventLoop, completion: @escaping @Sendable (PersonalJobView?, String?) -> Void)

    // MARK: The queues' side (personal loop)

    /// Slices of the board's jobs started here (the stats).
    var slicesStarted: Int { get }
    /// Saves a running slice's checkpoint (and its writes to this gateway's file); `completion`
    /// with the tokens deactivated, or why it was not saved.
    func save(_ key: SharedJobPlan.SliceKey, checkpoint: FanOutCheckpoint, isFinished: Bool, writes: [TokenOperation],
              completion: @escaping @Sendable (Result<Int, any Error>) -> Void)
    /// A slice's run ended once its last save was stored.
    func sliceRunEnded(_ key: SharedJobPlan.SliceKey)
    /// Cancels the board's kickoffs waiting to start into `apnsChannelID` (its channel ended).
    func cancelKickoffs(into apnsChannelID: String)
    /// Tells the channels again of the board's kickoffs started into `apnsChannelID`.
    func announceStarts(into apnsChannelID: String)
    /// Cancels the board's scheduled job `jobID` into `apnsChannelID`; false when the board
    /// holds no such waiting job (the queue answers then).
    func cancelScheduled(_ jobID: String, into apnsChannelID: String, answer: @escaping @Sendable (PersonalDispatcher.Cancellation) -> Void) -> Bool
    /// Retargets the board's kickoffs waiting to start into `previous` to `successor` (a
    /// rollover), after the queue's own; `completion` with whether they are stored.
    func moveScheduledStarts(from previous: String, to successor: String, completion: @escaping @Sendable (Bool) -> Void)
    /// The board's kickoffs waiting to start into `apnsChannelID`.
    func scheduledStarts(into apnsChannelID: String) -> [PersonalJobRecord]
    /// Stops the board's work (the queues' shutdown).
    func stop()
}

/// A job's progress on a board: the answer of `GET /v1/personal/{job}`.
package struct PersonalJobView: Sendable {
    var status: PersonalJobStatus
    var counts: PersonalJobCounts
    /// Nil once the job is finished (its slices' keys are gone).
    var slices: SliceProgress?
    var startAt: UnixTime?
    /// Cancelled before its start: nothing of it was sent.
    var withdrawn = false

    /// How many of a job's slices are finished.
    package struct SliceProgress: Sendable {
        var finished: Int
        var total: Int

        package init(finished: Int, total: Int) {
            self.finished = finished
            self.total = total
        }
    }

    package init(status: PersonalJobStatus, counts: PersonalJobCounts, slices: SliceProgress? = nil, startAt: UnixTime? = nil, withdrawn: Bool = false) {
        self.status = status
        self.counts = counts
        self.slices = slices
        self.startAt = startAt
        self.withdrawn = withdrawn
    }
}

/// A gateway on its own: every job in its personal file, run by its app's queue; nothing is
/// kept beyond the queues, so every question about the board's own jobs finds none.
package final class OwnJobs: PersonalJobBoard {
    package init() {}

    package var namesJobsByKey: Bool { false }

    package func storeRolloverStarts(_ jobs: [PersonalJobRecord], through intake: PersonalJobIntake, completion: @escaping @Sendable (Bool) -> Void) {
        intake.storeRolloverStartsInFile(jobs, completion: completion)
    }

    package func store(_ jobs: [PersonalJobRecord], then operations: [TokenOperation], through intake: PersonalJobIntake, for request: HTTPRequest,
               answer: JSONValue, idempotency claim: IdempotencyClaim?, settled: (@Sendable (_ stored: Bool) -> Void)?) {
        intake.commitToFile(jobs, with: operations, for: request, answer: answer, idempotency: claim, settled: settled)
    }

    package func progress(of jobID: String, answerLoop: EventLoop, completion: @escaping @Sendable (PersonalJobView?, String?) -> Void) {
        completion(nil, nil)
    }

    package var slicesStarted: Int { 0 }

    /// No slice runs on a gateway on its own, so nothing asks to save one; were something to,
    /// the answer is that nothing was stored (never a success for a write that was not made).
    package func save(_ key: SharedJobPlan.SliceKey, checkpoint: FanOutCheckpoint, isFinished: Bool, writes: [TokenOperation],
              completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        completion(.failure(NoSharedSlices(key: key)))
    }

    /// Why a gateway on its own saves no slice: it has no shared job board to save it on.
    package struct NoSharedSlices: Error, CustomStringConvertible {
        package let key: SharedJobPlan.SliceKey
        package var description: String { "a gateway on its own keeps no shared slices: slice \(key) was not saved" }
    }

    package func sliceRunEnded(_ key: SharedJobPlan.SliceKey) {}
    package func cancelKickoffs(into apnsChannelID: String) {}
    package func announceStarts(into apnsChannelID: String) {}

    package func cancelScheduled(_ jobID: String, into apnsChannelID: String, answer: @escaping @Sendable (PersonalDispatcher.Cancellation) -> Void) -> Bool {
        false
    }

    package func moveScheduledStarts(from previous: String, to successor: String, completion: @escaping @Sendable (Bool) -> Void) {
        completion(true)
    }

    package func scheduledStarts(into apnsChannelID: String) -> [PersonalJobRecord] { [] }
    package func stop() {}
}
