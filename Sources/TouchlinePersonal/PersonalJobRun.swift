import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// One personal job on the personal loop: its ``FanOutJob`` and the bookkeeping of its saves.
///
/// Progress is saved as one store commit holding the job's ``FanOutProgress`` together with the
/// dead letters and 410 deactivations gathered since the previous save, so the committed cursor,
/// counters, retry rows and dead letters never disagree. At most one save is in the store at a
/// time, and saves are at least `saveInterval` apart while sends are in flight.
///
/// **Thread confinement:** created and used on the personal loop only; `@unchecked Sendable` so
/// that store completions can hand it back to that loop.
package final class PersonalJobRun: @unchecked Sendable {
    /// The job's id (dead letters name it).
    let id: String
    /// The run's key among the dispatcher's runs: the job's id, and for a slice of a cluster's
    /// job the id with the slice (``sliceKey``).
    let runKey: String
    /// The slice of a cluster's job this run is (docs/cluster.md, "Personal jobs on the
    /// cluster"), nil for a job of this gateway's own file.
    let slice: AudienceSlice?
    let audience: PersonalAudience
    let tokenKind: TokenKind
    /// The channel a kickoff's starts subscribe to (`input-push-channel`), nil for other jobs.
    let inputPushChannel: String?
    var job: FanOutJob
    /// A cluster slice's pushes leave only while its partition is held under this (nil: a job
    /// of a gateway on its own, or of its own file).
    var fence: (any SideEffectFence)?
    var timer: LoopTimer?
    var saveTimer: LoopTimer?
    /// A cluster slice whose page could not be read reads it again when this fires.
    var fetchRetry: LoopTimer?
    /// Waits in the dispatcher's list of jobs to advance at the end of the loop turn.
    var isAnswered = false
    /// A slice stopped because its partition is no longer this gateway's: it saves nothing more.
    var isStopped = false
    /// Tokens this kickoff started (APNs accepted the start) whose record is not committed yet,
    /// in the order of their answers: with the store's records, what another start into the
    /// same channel leaves out. A list, not a set: one is appended per accepted start, and two
    /// hashes of a 64-character token per push were about 4% of the personal loop's time in a
    /// million-token kickoff; the rare lookup (another start into the channel running beside
    /// this one) makes a set of it for the page it narrows.
    private(set) var startsNotStored: [String] = []
    /// How many of ``startsNotStored``, from its start, are in the save that is in the store now.
    private var startsSavingCount = 0
    private var unsavedWrites: [TokenOperation] = []
    private var hasUnsavedProgress = false
    private var saveInStore = false
    /// Whether a save of it is still to be written: progress not taken yet, or a save in the
    /// store whose completion may find more (a finished job's last save waits for it).
    var isSaveOutstanding: Bool { hasUnsavedProgress || saveInStore }
    private var lastSave: UnixTime?
    private var hasStarted: Bool

    /// Where the job's end stands among its saves. The end (the final status, a file job's
    /// `personal.job.finished` event, a slice's end on the board) is reported by the first save
    /// taken once the job is finished, and again only if that save fails. A finished job is moved
    /// out of the running jobs at the end of a loop turn; a save completion coming before that
    /// turn's end could already have carried the end, and the move asked for one more save: a
    /// second event with a new id, and a slice's save the board refused (its run had ended)
    /// again every second.
    private enum EndSave {
        case notTaken
        case inStore
        case committed
    }

    private var endSave = EndSave.notTaken

    /// A job of this gateway's file, resumed from its saved progress and retry rows.
    convenience init(record: PersonalJobRecord, retries: [PersonalJobRetry], audience: PersonalAudience, tokenKind: TokenKind,
                     inputPushChannel: String? = nil, settings: PersonalQueueSettings, seed: UInt64) {
        var counters = FanOutCounters()
        counters.targeted = Int(record.counts.targeted)
        counters.sent = Int(record.counts.sent)
        counters.expired = Int(record.counts.expired)
        counters.failedByReason = record.counts.failed.mapValues(Int.init)
        counters.deadLettered = counters.failedByReason.values.reduce(0, +)
        let pending = retries.map {
            FanOutCheckpoint.PendingTarget(token: $0.token, attempts: $0.attempts, notBeforeNanoseconds: $0.retryAt.nanoseconds)
        }
        let checkpoint = FanOutCheckpoint(cursor: record.cursor, counters: counters, pending: pending,
                                          endedAfterCursor: record.endedAfterCursor)
        self.init(record: record, slice: nil, checkpoint: checkpoint, audience: audience, tokenKind: tokenKind, inputPushChannel: inputPushChannel,
                  limits: settings.jobLimits, settings: settings, seed: seed)
        hasStarted = record.status != .pending
    }

    /// A run from `checkpoint`: a slice of a cluster's job (`slice`), or a job of this gateway.
    init(record: PersonalJobRecord, slice: AudienceSlice?, checkpoint: FanOutCheckpoint, audience: PersonalAudience, tokenKind: TokenKind,
         inputPushChannel: String?, limits: FanOutJob.Limits, settings: PersonalQueueSettings, seed: UInt64) {
        id = record.id
        runKey = slice.map { Self.sliceKey(jobID: record.id, $0) } ?? record.id
        self.slice = slice
        self.audience = audience
        self.tokenKind = tokenKind
        self.inputPushChannel = inputPushChannel
        hasStarted = true
        job = FanOutJob(payload: record.payload, priority: record.priority, expiration: record.expiration, limits: limits,
                        policy: settings.delivery, seed: seed, checkpoint: checkpoint)
    }

    /// The run key of a slice.
    static func sliceKey(jobID: String, _ slice: AudienceSlice) -> String { "\(jobID)#\(slice.index)/\(slice.count)" }

    /// Something changed that the next save must carry.
    func noteProgress() { hasUnsavedProgress = true }

    /// The job is finished: its end is saved even when nothing since the last save said so
    /// (targets that expired without a send: a cancelled kickoff whose starts waited for a free
    /// slot), unless a save has carried it already.
    func noteEnd() {
        if endSave == .notTaken { hasUnsavedProgress = true }
    }

    /// Marks the end as carried by the save being taken, if the job is finished and no save
    /// carried it before; true when this save reports it.
    private func takeEnd() -> Bool {
        guard job.isFinished, endSave == .notTaken else { return false }
        endSave = .inStore
        return true
    }

    /// Whether this kickoff's pages must be looked up against the starts recorded into its
    /// channel: true unless, when it began, the channel had none recorded and no other start into
    /// it ran or had run here (then only this job starts devices into it, and its audience holds
    /// each device once); set again when another start into the channel begins beside it.
    var mayMeetRecordedStarts = true
    /// Whether a device was started by this run and its channel noted as started into (once per
    /// run, not per start: the set of such channels is hashed by channel id).
    var hasNotedAStart = false

    /// A start into a channel: each device is started into it at most once (docs/personal-pushes.md,
    /// "One start per device and generation"); the channel, for a kickoff's starts.
    var startsChannel: String? { tokenKind == .pushToStart ? inputPushChannel : nil }

    /// APNs accepted the start to `token`: recorded with the next save.
    func started(_ token: String) {
        startsNotStored.append(token)
        hasUnsavedProgress = true
    }

    /// The record of the starts not stored yet, for a save; marks them as being saved.
    private func takeStartRecords() -> [TokenOperation] {
        guard let channel = startsChannel, !startsNotStored.isEmpty else { return [] }
        startsSavingCount = startsNotStored.count
        return [.recordStarts(channel: channel, tokens: startsNotStored)]
    }

    /// A write to commit with the next save (a dead letter, a deactivation).
    func record(_ write: TokenOperation) {
        unsavedWrites.append(write)
        hasUnsavedProgress = true
    }

    /// When the next save may go: now, later (arm a timer), or not at all (nothing to save, or
    /// a save is still in the store and its completion will ask again).
    enum SaveTiming: Equatable {
        case now
        case at(UnixTime)
        case notNeeded
    }

    func saveTiming(now: UnixTime, interval: Duration) -> SaveTiming {
        guard hasUnsavedProgress, !saveInStore else { return .notNeeded }
        if job.isFinished || job.inFlightCount == 0 { return .now }
        guard let lastSave else { return .now }
        let due = lastSave + interval
        return due <= now ? .now : .at(due)
    }

    /// The operations of one save, in commit order; marks a save as being in the store. With an
    /// `outbox`, the save also records its webhook events: the dead letters it writes (one event
    /// per save, counted by reason) and, in the save that carries the job's end, its final counts.
    func takeSave(now: UnixTime, outbox: WebhookOutbox? = nil) -> [TokenOperation] {
        let progress = job.takeProgress()
        let finished = job.isFinished
        var operations: [TokenOperation] = progress.removedRetryRows.map { .clearTarget(jobID: id, token: $0) }
        operations += unsavedWrites + takeStartRecords()
        operations += progress.retryRows.map {
            .scheduleRetry(PersonalJobRetry(jobID: id, token: $0.token, attempts: $0.attempts,
                                            retryAt: UnixTime(nanoseconds: $0.notBeforeNanoseconds ?? 0)))
        }
        let counts = PersonalJobCounts(progress.counters)
        let status: PersonalJobStatus? = finished ? .done : (hasStarted ? nil : .running)
        operations.append(.advanceJob(PersonalJobProgress(jobID: id, cursor: progress.cursor, endedAfterCursor: progress.endedAfterCursor,
                                                          counts: counts, status: status, at: now)))
        let reportsEnd = takeEnd()
        if let outbox { operations += webhookEvents(of: operations, counts: counts, reportsEnd: reportsEnd, outbox: outbox) }
        hasStarted = true
        unsavedWrites = []
        hasUnsavedProgress = false
        saveInStore = true
        lastSave = now
        return operations
    }

    /// One save of a slice: the dead letters and deactivations gathered since the last (for
    /// this gateway's store) and the slice's whole checkpoint (for the cluster's job bucket).
    /// Marks a save as being out, like ``takeSave(now:outbox:)``; `endsRun` when it is the save
    /// that carries the slice's end (the board is told once it is stored).
    func takeSliceSave(now: UnixTime) -> (writes: [TokenOperation], checkpoint: FanOutCheckpoint, isFinished: Bool, endsRun: Bool) {
        let checkpoint = job.takeCheckpoint()
        let writes = unsavedWrites + takeStartRecords()
        unsavedWrites = []
        hasUnsavedProgress = false
        saveInStore = true
        lastSave = now
        return (writes, checkpoint, job.isFinished, takeEnd())
    }

    /// The store committed the last save, or failed it: then its writes go again with the next
    /// save (ahead of newer ones; each is idempotent), so no dead letter or retry row is lost.
    func saveEnded(failed operations: [TokenOperation]?) {
        saveInStore = false
        defer { startsSavingCount = 0 }
        if endSave == .inStore { endSave = operations == nil ? .committed : .notTaken }
        guard let operations else {
            // Starts accepted while the save was out came after the ones it held.
            startsNotStored.removeFirst(startsSavingCount)
            return
        }
        // The job's progress, its webhook events and its starts' record are made again by the next save.
        unsavedWrites = operations.filter {
            switch $0 {
            case .advanceJob, .webhook, .recordStarts: false
            default: true
            }
        } + unsavedWrites
        hasUnsavedProgress = true
    }

    /// The events one save reports: its dead letters by reason, and the job's end if it carries it.
    private func webhookEvents(of operations: [TokenOperation], counts: PersonalJobCounts, reportsEnd: Bool,
                               outbox: WebhookOutbox) -> [TokenOperation] {
        var events = Self.deadLettersEvent(of: id, in: operations, outbox: outbox).map { [$0] } ?? []
        if reportsEnd { events.append(Self.finishedEvent(of: id, counts: counts, outbox: outbox)) }
        return events
    }

    /// The webhook event of the dead letters among `operations` (their count by reason), if any.
    package static func deadLettersEvent(of id: String, in operations: [TokenOperation], outbox: WebhookOutbox) -> TokenOperation? {
        var reasons: [String: Int64] = [:]
        for case .deadLetter(let letter) in operations { reasons[letter.reason, default: 0] += 1 }
        guard !reasons.isEmpty else { return nil }
        return .webhook(outbox.record(.deadLettersCreated, [
            .init("jobId", .string(id)), .init("count", .integer(reasons.values.reduce(0, +))),
            .init("reasons", .object(reasons.sorted { $0.key < $1.key }.map { .init($0.key, .integer($0.value)) })),
        ]))
    }

    /// The webhook event of a job's end, with its final counts.
    package static func finishedEvent(of id: String, counts: PersonalJobCounts, outbox: WebhookOutbox) -> TokenOperation {
        .webhook(outbox.record(.personalJobFinished, [
            .init("jobId", .string(id)), .init("targeted", .integer(counts.targeted)), .init("sent", .integer(counts.sent)),
            .init("failed", .object(counts.failed.sorted { $0.key < $1.key }.map { .init($0.key, .integer($0.value)) })),
            .init("expired", .integer(counts.expired)), .init("pending", .integer(counts.pending)),
        ]))
    }
}

extension PersonalJobCounts {
    /// A job's counts as stored and shown, from the fan-out's counters.
    package init(_ counters: FanOutCounters) {
        self.init(targeted: Int64(counters.targeted), sent: Int64(counters.sent), failed: counters.failedByReason.mapValues(Int64.init),
                  expired: Int64(counters.expired), pending: Int64(counters.pending))
    }
}
