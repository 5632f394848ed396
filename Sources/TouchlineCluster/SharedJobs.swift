import Foundation
import TouchlineChannels
import TouchlineCore
import TouchlineJetStream
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// Personal jobs shared by a cluster's gateways (docs/cluster.md, "Personal jobs on the
/// cluster"): a job accepted by any gateway is one entry in the cluster's job bucket, cut in
/// slices of its audience; each slice runs in the personal queue of the gateway owning the
/// slice's partition, saves its whole checkpoint to the bucket, and is resumed from it by the
/// next owner when that gateway dies or leaves. ``SharedJobPlan`` decides; this class feeds it
/// the bucket's watch and the partition leases, and carries its decisions out through the
/// ``PersonalDispatcher`` and the ``SharedJobBoard``.
///
/// **Thread confinement:** the personal loop, like the dispatcher (``create(_:slices:completion:)``
/// and ``progress(of:completion:)`` hop there from any loop); `@unchecked Sendable` so that
/// closures of that loop can capture it.
final class SharedJobs: @unchecked Sendable {
    /// A slice waiting for this gateway's registry copy is looked at again after this long.
    static let registryWait: Duration = .milliseconds(100)
    /// A job whose final counts could not be written is tried again after this long.
    static let finishRetry: Duration = .seconds(1)

    let board: SharedJobBoard
    /// Every app's personal queue, by app: a slice runs in its job's app's queue (``queue(ofJob:)``).
    private let queues: PerApp<PersonalDispatcher>
    private let store: any PersonalStoreWriter
    /// This gateway's personal file, read on the loop.
    private let reader: any PersonalStoreReader
    /// This gateway's registry copy position (``SharedTokenRegistry/appliedSequence``).
    private let registryPosition: @Sendable () -> UInt64
    /// The log position this gateway's copy catches up to (``SharedTokenRegistry/catchUpTarget``):
    /// a job accepted while the copy is still built asks its slices for at least this much, so
    /// they miss nothing registered anywhere before this gateway started.
    private let registryTarget: @Sendable () -> UInt64
    /// The partitioned registry, when the cluster holds it so: jobs that walk it are cut on its
    /// partitions, and a slice runs once its partition's file is taken up here.
    private let partitionedRegistry: PartitionedRegistry?
    private let instance: String
    private let outbox: WebhookOutbox?
    let clock: any WallClock
    let log: GatewayLog
    /// The personal loop, where every app's queue runs.
    let loop: EventLoop

    var plan: SharedJobPlan
    /// Open jobs' entries (what their slices run), and finished jobs' final counts only.
    var entries: [String: SharedJobEntry] = [:]
    /// Jobs cancelled (their kickoff's channel ended), with the time.
    var cancelled: [String: UnixTime] = [:]
    private var finishedJobs: [String: FinishedJob] = [:]

    /// What a finished job's entry says.
    private struct FinishedJob {
        var counters: FanOutCounters
        var startAt: UnixTime?
        /// Cancelled before its start: nothing was sent.
        var withdrawn: Bool
    }
    /// The answers of idempotent requests, by the id of the first job each created (open and
    /// finished jobs alike, as long as the bucket holds their entries).
    private var idempotentAnswers: [String: IdempotentAnswer] = [:]
    /// Each slice's last saved progress known here, with its revision.
    private var saved: [SharedJobPlan.SliceKey: (entry: SliceEntry, revision: UInt64)] = [:]
    /// Slices the plan runs here that wait for the registry copy to reach their job's position.
    private var waitingForRegistry: Set<SharedJobPlan.SliceKey> = []
    /// Slices whose last save is being read before they run.
    private var readingSaves: Set<SharedJobPlan.SliceKey> = []
    private var registryTimer: LoopTimer?
    /// Acts again after a failed write of the bucket.
    private var retryTimer: LoopTimer?
    /// Fires when the next scheduled start this gateway records is due.
    var startTimer: LoopTimer?
    /// Provider cancellations of scheduled jobs sent from here, waiting for the watch to show
    /// whether they came before the start.
    var withdrawals: [String: Withdrawal] = [:]
    /// Jobs whose entry cannot be run, with the reason (never sent; shown by the API).
    private(set) var brokenJobs: [String: String] = [:]
    /// The partitions held here, each with the fence it is held under: a slice runs, sends and
    /// saves under its partition's fence.
    private var heldUnder: [Int: Fence] = [:]
    /// The leases' holds, which every send and save of a slice checks as it leaves.
    private let fences: PartitionFences
    /// When finished jobs leave the bucket and this gateway's memory.
    private(set) var expiry: FinishedJobExpiry
    private var expiryTimer: LoopTimer?
    /// Slices started here since the start (figures and tests).
    private(set) var slicesStarted = 0
    /// Jobs whose definition this gateway's file holds: a copy, marked done, written with the
    /// first dead letters this gateway made of the job, so that a replay of them through this
    /// gateway finds the original's payload, priority and expiration (the file holds no other
    /// trace of a job the cluster ran).
    private var definitionsKept: Set<String> = []

    init(board: SharedJobBoard, partitioning: ChannelPartitioning, fences: PartitionFences, loop: EventLoop, queues: PerApp<PersonalDispatcher>,
         store: any PersonalStoreWriter,
         reader: any PersonalStoreReader, registryPosition: @escaping @Sendable () -> UInt64,
         registryTarget: @escaping @Sendable () -> UInt64, partitionedRegistry: PartitionedRegistry? = nil, instance: String,
         outbox: WebhookOutbox?, finishedJobRetention: Duration, clock: any WallClock, log: GatewayLog) {
        self.board = board
        expiry = FinishedJobExpiry(retention: finishedJobRetention)
        self.fences = fences
        self.loop = loop
        self.queues = queues
        self.store = store
        self.reader = reader
        self.registryPosition = registryPosition
        self.registryTarget = registryTarget
        self.partitionedRegistry = partitionedRegistry
        self.instance = instance
        self.outbox = outbox
        self.clock = clock
        self.log = log
        plan = SharedJobPlan(partitioning: partitioning)
    }

    /// The shared jobs of a cluster gateway: its job bucket opened, the queues' slices saving
    /// through it, the watch started (blocking: from the starting thread, `loop` the queues').
    static func start(on cluster: ClusterNode, loop: EventLoop, queues: PerApp<PersonalDispatcher>,
                      store: any PersonalStoreWriter, reader: any PersonalStoreReader,
                      outbox: WebhookOutbox?, clock: any WallClock, log: GatewayLog) throws -> SharedJobs {
        let board = try SharedJobBoard.open(jetStream: cluster.jetStream, prefix: cluster.settings.prefix, replicas: cluster.settings.replicas,
                                            maximumBytes: cluster.settings.limits.jobsBytes, loop: loop)
        let registry = store as? SharedTokenRegistry
        let shared = SharedJobs(board: board, partitioning: cluster.partitioning, fences: cluster.fences, loop: loop, queues: queues,
                                store: store, reader: reader,
                                registryPosition: { registry?.appliedSequence ?? 0 },
                                registryTarget: { registry?.catchUpTarget.load(ordering: .acquiring) ?? 0 },
                                partitionedRegistry: cluster.registryPartitions, instance: cluster.settings.instance.name,
                                outbox: outbox, finishedJobRetention: cluster.settings.finishedJobRetention, clock: clock, log: log)
        try loop.sync { queues.all.forEach { $0.jobBoard = shared } }
        try shared.start()
        return shared
    }

    /// Starts watching the bucket (blocking: from the starting thread) and sweeping expired jobs.
    func start() throws {
        try board.start(onChange: { [weak self] change in self?.observed(change) },
                        onUnreadable: { [weak self] key in self?.log.error("the job bucket's key \(key) cannot be read; it is skipped") })
        try loop.sync { [self] in
            let timer = LoopTimer(loop: loop) { [weak self] in self?.sweepExpiredJobs() }
            expiryTimer = timer
            timer.schedule(after: expiry.sweepInterval)
        }
    }

    func stop() {
        board.stop()
        expiryTimer?.cancel()
        registryTimer?.cancel()
        retryTimer?.cancel()
        startTimer?.cancel()
    }

    // MARK: Inputs

    /// The partitions whose leases this gateway holds now (on the loop).
    func ownershipChanged(_ partitions: [Int: Fence]) {
        let before = heldUnder
        heldUnder = partitions
        plan.ownedPartitionsChanged(Set(partitions.keys))
        // A partition lost and held again between two calls keeps running its slices, but
        // under the new fence: the old one withholds every send and save.
        for key in plan.running.sorted() {
            let partition = plan.partition(of: key)
            guard let old = before[partition], let new = partitions[partition], old != new else { continue }
            queue(ofJob: key.jobID).stopSlice(key)
            run(key)
        }
        act()
    }

    private func observed(_ change: SharedJobBoard.Change) {
        switch change {
        case .job(let entry):
            plan.jobChanged(entry.id, .init(sliceCount: entry.slices, isFinished: entry.finished != nil,
                                            startAt: entry.startAtNanoseconds.map(UnixTime.init(nanoseconds:)),
                                            slicesFollowRegistry: entry.slicesFollowRegistry == true))
            if let answer = entry.idempotency { idempotentAnswers[entry.id] = answer }
            if let counters = entry.finished {
                expiry.finished(entry.id, at: entry.finishedAtNanoseconds.map(UnixTime.init(nanoseconds:)) ?? clock.now())
                entries[entry.id] = nil
                finishedJobs[entry.id] = FinishedJob(counters: counters, startAt: entry.startAtNanoseconds.map(UnixTime.init(nanoseconds:)),
                                                     withdrawn: entry.withdrawn == true)
                cancelled[entry.id] = nil
                saved = saved.filter { $0.key.jobID != entry.id }
            } else if finishedJobs[entry.id] == nil {
                entries[entry.id] = entry
            }
        case .slice(let key, let entry, let revision):
            // The watch may still deliver what this gateway's own later save replaced.
            guard finishedJobs[key.jobID] == nil, revision > saved[key]?.revision ?? 0 else { return }
            saved[key] = (entry, revision)
            plan.sliceChanged(key, .init(counters: entry.checkpoint.counters, isFinished: entry.isFinished))
        case .cancelled(let jobID, let nanoseconds, let revision):
            guard finishedJobs[jobID] == nil, cancelled[jobID] == nil else { return }
            plan.cancellationRecorded(jobID, revision: revision)
            let at = UnixTime(nanoseconds: nanoseconds)
            cancelled[jobID] = at
            queue(ofJob: jobID).expireSlices(ofJob: jobID, at: at)
        case .started(let jobID, let revision):
            plan.startRecorded(jobID, revision: revision)
            settleWithdrawal(of: jobID)
            announceStart(of: jobID)
        case .withdrawn(let jobID, let revision):
            plan.cancellationRecorded(jobID, revision: revision)
            settleWithdrawal(of: jobID)
        case .removed(let jobID):
            expiry.removed(jobID, seenAt: clock.now())
            plan.jobChanged(jobID, nil)
            entries[jobID] = nil
            finishedJobs[jobID] = nil
            idempotentAnswers[jobID] = nil
            cancelled[jobID] = nil
            saved = saved.filter { $0.key.jobID != jobID }
        }
        act()
    }

    /// Removes the finished jobs past their retention from the bucket and purges the keys of
    /// those removed a sweep ago, while this gateway holds partition 0 (the sweeper); each write
    /// leaves only while that hold does. Then sweeps again a sweep interval later.
    private func sweepExpiredJobs() {
        defer { expiryTimer?.schedule(after: expiry.sweepInterval) }
        let sweeperFence = heldUnder[0].map { fences.fence(of: 0, $0) }
        for action in expiry.sweep(at: clock.now(), isSweeper: sweeperFence != nil) {
            switch action {
            case .remove(let jobID):
                guard let sweeperFence else { continue }
                board.remove(jobID: jobID, fence: sweeperFence) { [self] result in
                    guard case .failure(let error) = result else { return }
                    expiry.removeFailed(jobID)
                    log.warning("removing the expired job from the bucket failed: \(error); trying again at the next sweep", job: jobID)
                }
            case .purge(let jobID):
                board.purge(jobID: jobID) { [self] result in
                    if case .failure(let error) = result { log.warning("purging the removed job's keys failed: \(error); they stay", job: jobID) }
                }
            }
        }
    }

    /// A slice run ended here (finished and saved): the plan may finish its job.
    func sliceRunEnded(_ key: SharedJobPlan.SliceKey) {
        plan.runEnded(key)
        act()
    }

    // MARK: Acting

    func act() {
        for action in plan.decide(at: clock.now()) {
            switch action {
            case .run(let key): run(key)
            case .stop(let key):
                waitingForRegistry.remove(key)
                queue(ofJob: key.jobID).stopSlice(key)
                log.notice("stopped \(key): its partition is no longer this gateway's", job: key.jobID)
            case .finish(let jobID, let counters): finish(jobID, counters: counters)
            case .recordStart(let jobID): recordStart(jobID)
            case .withdraw(let jobID): finish(jobID, counters: FanOutCounters(), withdrawn: true)
            }
        }
        armStartTimer()
    }

    /// The last check of a slice's sends and saves: its partition still held under the fence it runs under.
    private func sliceFence(_ key: SharedJobPlan.SliceKey) -> PartitionFence? {
        let partition = plan.partition(of: key)
        return heldUnder[partition].map { fences.fence(of: partition, $0) }
    }

    private func run(_ key: SharedJobPlan.SliceKey) {
        guard let entry = entries[key.jobID] else { return }
        guard registryPosition() >= entry.registrySequence else { return runLater(key) }
        if entry.slicesFollowRegistry == true, let registry = partitionedRegistry, registry.path(of: plan.partition(of: key)) == nil {
            // Its lease is here, its tokens not yet: the registry partition is still taken up.
            return runLater(key)
        }
        guard !readingSaves.contains(key) else { return }
        readingSaves.insert(key)
        let board = board
        DedicatedThread.start(name: "touchline-slice-save-read") { [weak self] in
            let current = Result { try board.currentSave(of: key) }
            self?.loop.execute { [weak self] in self?.start(key, from: current) }
        }
    }

    /// Starts a slice run from its last save as the cluster holds it (``SharedJobBoard/currentSave(of:)``),
    /// not from the watch's view, which a paused gateway wakes up with far behind: resumed from
    /// that, it sent again what the gateway that ran the slice meanwhile had saved as sent. A
    /// read the cluster does not answer is tried again a moment later.
    private func start(_ key: SharedJobPlan.SliceKey, from current: Result<(entry: SliceEntry, revision: UInt64)?, any Error>) {
        readingSaves.remove(key)
        guard plan.running.contains(key), let entry = entries[key.jobID], finishedJobs[key.jobID] == nil else { return }
        // The partition may have gone while its save was read: the plan starts it again when it comes back.
        guard let fence = sliceFence(key) else {
            plan.runEnded(key)
            return act()
        }
        switch current {
        case .success(let latest?) where latest.revision > saved[key]?.revision ?? 0:
            saved[key] = latest
            plan.sliceChanged(key, .init(counters: latest.entry.checkpoint.counters, isFinished: latest.entry.isFinished))
        case .success:
            break
        case .failure(let error):
            log.warning("reading \(key)'s last save failed: \(error); trying again in \(Self.registryWait)", job: key.jobID)
            return runLater(key)
        }
        if saved[key]?.entry.isFinished == true {
            // Finished meanwhile by another gateway: nothing to send.
            plan.runEnded(key)
            return act()
        }
        let checkpoint = saved[key]?.entry.checkpoint
            ?? FanOutCheckpoint(cursor: key.slice.startCursor, counters: FanOutCounters(), pending: [], endedAfterCursor: [])
        log.info("runs \(key) from " + (saved[key].map { "its save at revision \($0.revision) by \($0.entry.instance) (\($0.entry.checkpoint.counters.sent) sent)" } ?? "its start"),
                 job: key.jobID)
        do {
            try queue(ofJob: key.jobID).runSlice(key, of: Self.record(of: entry), checkpoint: checkpoint, maximumWindow: SharedJobBoard.maximumSliceWindow,
                                    expiredAt: cancelled[key.jobID], fence: fence)
            slicesStarted += 1
        } catch {
            // It stays "running" in the plan, so it is not tried again: it can never be sent.
            if brokenJobs[key.jobID] == nil { log.error("the job cannot run: \(error); it is shown as broken and never sent", job: key.jobID) }
            brokenJobs[key.jobID] = error.description
        }
    }

    /// Runs `key` again a moment later (its registry copy behind its job's position, or its save unread).
    private func runLater(_ key: SharedJobPlan.SliceKey) {
        waitingForRegistry.insert(key)
        let timer = registryTimer ?? LoopTimer(loop: loop) { [weak self] in self?.retryWaiting() }
        registryTimer = timer
        if !timer.isScheduled { timer.schedule(after: Self.registryWait) }
    }

    private func retryWaiting() {
        let waiting = waitingForRegistry
        waitingForRegistry = []
        for key in waiting.sorted() where plan.running.contains(key) { run(key) }
    }

    /// Records the job's end in this gateway's webhook outbox (a withdrawn job never started:
    /// nothing to report), then writes its final counts.
    private func finish(_ jobID: String, counters: FanOutCounters, withdrawn: Bool = false) {
        guard var finished = entries[jobID] else { return }
        finished.finished = counters
        finished.finishedAtNanoseconds = clock.now().nanoseconds
        if withdrawn { finished.withdrawn = true }
        let entry = finished
        let events = withdrawn ? [] : outbox.map { [PersonalJobRun.finishedEvent(of: jobID, counts: PersonalJobCounts(counters), outbox: $0)] } ?? []
        let failed: @Sendable (String) -> Void = { [self] error in
            loop.execute { [self] in
                log.error("writing the job's final counts failed: \(error); trying again", job: jobID)
                plan.finishFailed(jobID)
                retryActingSoon()
            }
        }
        let publish: @Sendable () -> Void = { [self] in
            loop.execute { [self] in
                board.publish(entry) { [self] result in
                    switch result {
                    case .failure(let error): failed(error.description)
                    case .success: forget(jobID, slices: entry.slices, scheduled: entry.startAtNanoseconds != nil)
                    }
                }
            }
        }
        guard !events.isEmpty else { return publish() }
        store.submit(events) { result in
            switch result {
            case .success: publish()
            case .failure(let error): failed(error.description)
            }
        }
    }

    /// Acts again after ``finishRetry`` (a write of the bucket failed).
    func retryActingSoon() {
        let timer = retryTimer ?? LoopTimer(loop: loop) { [weak self] in self?.act() }
        retryTimer = timer
        if !timer.isScheduled { timer.schedule(after: Self.finishRetry) }
    }

    /// Deletes a finished job's slice keys from the bucket (its final counts are in its entry);
    /// keys left by a failure are harmless: the watch skips the slices of finished jobs.
    private func forget(_ jobID: String, slices: Int, scheduled: Bool) {
        board.forget(jobID: jobID, slices: slices, scheduled: scheduled) { [self] result in
            if case .failure(let error) = result { log.warning("removing the finished job's slice keys failed: \(error); they stay, unused", job: jobID) }
        }
    }

    /// Cancels the kickoffs into a channel that ends or is deleted, on every gateway running
    /// their slices (the channel's owner calls it with its own ``PersonalDispatcher/closeKickoffs(into:settled:)``).
    func cancelKickoffs(into apnsChannelID: String) {
        let now = clock.now()
        // Read from the open jobs' payloads: a channel ends rarely, jobs are accepted often.
        let kickoffs = entries.values.filter { cancelled[$0.id] == nil && Self.inputPushChannel(of: $0) == apnsChannelID }
        for jobID in kickoffs.map(\.id).sorted() {
            board.cancel(jobID: jobID, atNanoseconds: now.nanoseconds) { [self] result in
                if case .failure(let error) = result {
                    log.error("cancelling the kickoff on the cluster failed: \(error); its slices on other gateways finish it", job: jobID)
                }
            }
        }
    }

    // MARK: Saves

    /// Saves a slice run here: `writes` (its dead letters and deactivations) to this gateway's
    /// store, then its checkpoint to the bucket. Refused if the slice is no longer this
    /// gateway's to run. `completion` on the loop with the tokens the writes deactivated.
    func save(_ key: SharedJobPlan.SliceKey, checkpoint: FanOutCheckpoint, isFinished: Bool, writes: [TokenOperation],
              completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        guard plan.running.contains(key) else { return completion(.failure(NotOwned(key: key))) }
        let entry = SliceEntry(checkpoint: checkpoint, isFinished: isFinished, instance: instance)
        guard !writes.isEmpty else { return publish(entry, for: key, deactivated: 0, completion: completion) }
        let (kept, keeping) = keepingDefinition(of: key.jobID, with: writes)
        // Reported in the same commit as the dead letters (made again by the next save if this one fails).
        let written = kept + (outbox.flatMap { PersonalJobRun.deadLettersEvent(of: key.jobID, in: writes, outbox: $0) }.map { [$0] } ?? [])
        store.submit(summarizing: written) { [self] result in
            loop.execute { [self] in
                switch result {
                case .success(let summary): publish(entry, for: key, deactivated: summary.tokensDeactivated, completion: completion)
                case .failure(let error):
                    if keeping { definitionsKept.remove(key.jobID) }
                    completion(.failure(error))
                }
            }
        }
    }

    /// `writes`, led by a copy of the job's definition (marked done) when they hold its first
    /// dead letters on this gateway and its file has no copy yet; and whether they are.
    private func keepingDefinition(of jobID: String, with writes: [TokenOperation]) -> ([TokenOperation], Bool) {
        guard !definitionsKept.contains(jobID), let entry = entries[jobID],
              writes.contains(where: { if case .deadLetter = $0 { true } else { false } }) else { return (writes, false) }
        definitionsKept.insert(jobID)
        if (try? reader.job(id: jobID)) != nil { return (writes, false) }
        var definition = Self.record(of: entry)
        definition.status = .done
        return ([.createJob(definition)] + writes, true)
    }

    private func publish(_ entry: SliceEntry, for key: SharedJobPlan.SliceKey, deactivated: Int,
                         completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        // The lease may have gone while the writes were in the store.
        guard plan.running.contains(key), let fence = sliceFence(key) else { return completion(.failure(NotOwned(key: key))) }
        // Fenced twice: sent only while the partition is still held under the slice's fence, and
        // stored only over the save this gateway knows last (a late save of an earlier owner, or
        // one this gateway has not seen, refuses it).
        board.publish(entry, for: key, fence: fence, over: saved[key]?.revision ?? 0) { [self] result in
            switch result {
            case .success(let revision):
                // What this gateway wrote is what it runs from, whatever the watch shows yet.
                if revision > saved[key]?.revision ?? 0 { saved[key] = (entry, revision) }
                plan.sliceChanged(key, .init(counters: entry.checkpoint.counters, isFinished: entry.isFinished))
                completion(.success(deactivated))
            case .failure(let error): completion(.failure(error))
            }
        }
    }

    /// A save of a slice that is no longer this gateway's.
    struct NotOwned: Error, CustomStringConvertible {
        let key: SharedJobPlan.SliceKey
        var description: String { "\(key) is no longer run by this gateway" }
    }

    // MARK: The API's side

    /// Stores a new job in the cluster's bucket (from any loop), with the idempotent request's
    /// answer if it came with a key; `completion` runs on `answerLoop` once the cluster has it
    /// (then it is durable, and will run wherever its slices' partitions are owned), with
    /// whether it was stored now (false: a job of this id was stored within the bucket's
    /// duplicate window, by a request with the same key).
    func create(_ record: PersonalJobRecord, idempotency: IdempotentAnswer? = nil, answerLoop: EventLoop,
                completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        let audience = PersonalAudience(storedText: record.audience)
        // On a partitioned registry, a walk is cut on its partitions: each slice's tokens are one partition's.
        let registryPartitions = audience?.walksRegistry == true ? partitionedRegistry?.partitioning.count : nil
        let slices = registryPartitions ?? audience?.sliceCount ?? 1
        loop.execute { [self] in
            var entry = SharedJobEntry(id: record.id, createdAtNanoseconds: record.createdAt.nanoseconds, audience: record.audience,
                                       payload: Data(record.payload), priority: record.priority,
                                       expirationNanoseconds: record.expiration?.nanoseconds, slices: slices,
                                       registrySequence: max(registryPosition(), registryTarget()))
            entry.idempotency = idempotency
            entry.startAtNanoseconds = record.startAt?.nanoseconds
            entry.app = record.app == AppChannelID.defaultApp ? nil : record.app
            entry.slicesFollowRegistry = registryPartitions != nil ? true : nil
            board.publish(entry) { result in
                answerLoop.execute { completion(result.mapError { $0 }) }
            }
        }
    }

    /// Stores those of `records` the bucket does not hold yet (a job id that follows from what
    /// it is for, such as a rollover's starts, stored once whichever gateway asks again after a
    /// takeover); `completion` on `answerLoop` with whether every one is stored.
    func createMissing(_ records: [PersonalJobRecord], answerLoop: EventLoop, completion: @escaping @Sendable (Bool) -> Void) {
        loop.execute { [self] in
            let missing = records.filter { entries[$0.id] == nil && finishedJobs[$0.id] == nil }
            storeEach(missing[...], answerLoop: answerLoop, completion: completion)
        }
    }

    /// Stores `records` one after another (a rollover has at most 16), stopping at a failure.
    private func storeEach(_ records: ArraySlice<PersonalJobRecord>, answerLoop: EventLoop, completion: @escaping @Sendable (Bool) -> Void) {
        guard let record = records.first else { return answerLoop.execute { completion(true) } }
        create(record, answerLoop: loop) { [self] result in
            if case .failure(let error) = result {
                log.error("storing the job in the cluster failed: \(error)", job: record.id)
                return answerLoop.execute { completion(false) }
            }
            storeEach(records.dropFirst(), answerLoop: answerLoop, completion: completion)
        }
    }

    /// The answer of the idempotent request that created job `jobID` first, if the bucket holds
    /// it (`completion` on `answerLoop`).
    func idempotentAnswer(of jobID: String, answerLoop: EventLoop, completion: @escaping @Sendable (IdempotentAnswer?) -> Void) {
        loop.execute { [self] in
            let answer = idempotentAnswers[jobID]
            answerLoop.execute { completion(answer) }
        }
    }

    /// A job's status, counts and slices as the bucket shows them, nil if it holds no such job,
    /// and why it cannot run if it is broken (`completion` on `answerLoop`).
    func progress(of jobID: String, answerLoop: EventLoop, completion: @escaping @Sendable (PersonalJobView?, String?) -> Void) {
        loop.execute { [self] in
            let broken = brokenJobs[jobID]
            var view: PersonalJobView?
            if let finished = finishedJobs[jobID] {
                view = PersonalJobView(status: .done, counts: PersonalJobCounts(finished.counters), startAt: finished.startAt, withdrawn: finished.withdrawn)
            } else if let entry = entries[jobID], let progress = plan.progress(of: jobID) {
                let startAt = entry.startAtNanoseconds.map(UnixTime.init(nanoseconds:))
                switch plan.schedule(of: jobID) {
                case .waiting?:
                    view = PersonalJobView(status: .pending, counts: PersonalJobCounts(progress.counters), startAt: startAt)
                case .withdrawn?:
                    view = PersonalJobView(status: .done, counts: PersonalJobCounts(progress.counters), startAt: startAt, withdrawn: true)
                case .started?, nil:
                    let started = saved.keys.contains { $0.jobID == jobID }
                    view = PersonalJobView(status: started ? .running : .pending, counts: PersonalJobCounts(progress.counters),
                                   slices: .init(finished: progress.slicesFinished, total: progress.slices), startAt: startAt)
                }
            }
            let result = view
            answerLoop.execute { completion(result, broken) }
        }
    }

    /// The APNs channel a job's start subscribes its activities to (a kickoff's), nil for others.
    static func inputPushChannel(of entry: SharedJobEntry) -> String? {
        (try? StoredJob(record(of: entry)))?.inputPushChannel
    }

    /// A stored job's entry as the record the dispatcher runs.
    static func record(of entry: SharedJobEntry) -> PersonalJobRecord {
        var record = PersonalJobRecord(id: entry.id, createdAt: UnixTime(nanoseconds: entry.createdAtNanoseconds), audience: entry.audience,
                                       payload: Array(entry.payload), priority: entry.priority,
                                       expiration: entry.expirationNanoseconds.map(UnixTime.init(nanoseconds:)), status: .running,
                                       app: entry.app ?? AppChannelID.defaultApp)
        record.startAt = entry.startAtNanoseconds.map(UnixTime.init(nanoseconds:))
        return record
    }

    /// The personal queue of a job's app (its entry's; `default` for a job not known yet).
    func queue(ofJob jobID: String) -> PersonalDispatcher {
        queues[entries[jobID]?.app ?? AppChannelID.defaultApp]
    }
}

extension PersonalAudience {
    /// Slices a cluster cuts a job with this audience in: a walk of the registry or of a token
    /// list is cut by token; one token or one user's tokens is one slice.
    var sliceCount: Int { walksRegistry ? AudienceSlice.hexDigitCount : 1 }

    /// A walk of the registry (its follow index, or a token list looked up in it), which a
    /// partitioned registry's partitions hold in shares.
    var walksRegistry: Bool {
        switch self {
        case .token, .userID: false
        case .follows, .tokens: true
        }
    }
}
