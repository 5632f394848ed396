import APNs
import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// Runs personal fan-out jobs, isolated from broadcasts: its own loop and thread, its own APNs
/// connection pool and its own read connection, so a million-token backlog never delays a
/// broadcast (nothing on the broadcast path waits for anything here).
///
/// Each job is a ``FanOutJob`` (the pure state machine); this class carries out its actions:
/// reads audience pages from the registry, sends the job's payload (encoded once) to each token,
/// maps APNs answers to ``PersonalOutcome``, and saves progress (``PersonalJobRun``).
/// Sends in flight over all jobs stay within `maxInFlight`, shared evenly between running jobs.
/// At start, ``resumeStoredJobs(_:openChannels:once:broken:)`` picks up the jobs a previous process left unfinished.
///
/// **Thread confinement:** everything but ``run(_:)``, ``resumeStoredJobs(_:openChannels:once:broken:)`` and
/// ``shutdown()`` runs on ``loop``; `@unchecked Sendable` only so loop jobs can capture it.
package final class PersonalDispatcher: @unchecked Sendable {
    package let loop: EventLoop
    private let apns: any PersonalAPNsDispatch
    private let reader: any PersonalStoreReader
    let store: any PersonalStoreWriter
    let clock: any WallClock
    private let settings: PersonalQueueSettings
    /// Registry tokens of this APNs environment only are targeted (nil: any, for custom endpoints).
    private let tokenEnvironment: TokenEnvironment?
    /// The app whose jobs it runs: its tokens, through its APNs connections. Each app has a
    /// dispatcher of its own (its pool, window and queue) on the personal loop.
    let app: String
    private let broadcastPressure: BroadcastPressure
    private let log: GatewayLog
    /// Records the webhook events of job ends and dead letters in the saves that carry them.
    private let webhooks: WebhookDelivery?
    private var jobs: [String: PersonalJobRun] = [:]
    /// Finished jobs whose last save is not written yet (one of theirs was in the store as they
    /// finished): a shutdown writes it, or they would resume after the restart from the save
    /// before and send again what they sent since.
    private var finishedUnsaved: [String: PersonalJobRun] = [:]
    private var inFlight = 0
    private(set) var isStopping = false
    /// Jobs with answers since their last `nextSends`, advanced once at the end of the loop
    /// turn: one batch of new sends per read instead of one call per answer.
    private var answeredJobs: [PersonalJobRun] = []
    private var turnEnd: LoopTimer?
    /// The channels kickoffs may still name (see ``KickoffChannels``).
    private var kickoffChannels = KickoffChannels()
    /// Kickoffs waiting for their time, and the timer of the next (on the loop; see
    /// `PersonalDispatcher+Schedule.swift`).
    var scheduled = ScheduledStarts()
    var scheduleTimer: LoopTimer?
    /// Stored jobs that failed their check at resume, with the reason: never run, shown to operators.
    private(set) var brokenJobs: [String: String] = [:]
    /// Counters for `/metrics` and the stats, on this loop.
    let metrics: PersonalMetrics
    /// Where jobs beyond this queue's own are kept (the backend's; on a cluster, its job
    /// bucket, through which the slices run here save); set once at start.
    package var jobBoard: any PersonalJobBoard = OwnJobs()
    /// Told when a scheduled kickoff starts, with its audience and the APNs channel it starts
    /// into (the channels keep it for their rollovers); set once at start.
    package var scheduledStartBegan: (@Sendable (KickoffTemplate, String) -> Void)?
    /// The APNs channels this dispatcher started a device into since it began (a start's record
    /// may not be committed yet when the next kickoff into the channel asks the store), until the
    /// channel closes; with the store, what ``noteStartsBeginning(_:)`` asks.
    private var channelsStartedInto: Set<String> = []

    /// `apns` must live on `loop`; `reader` is used on `loop` only from now on.
    package init(loop: EventLoop, apns: any PersonalAPNsDispatch, reader: any PersonalStoreReader, store: any PersonalStoreWriter, clock: any WallClock,
         settings: PersonalQueueSettings = PersonalQueueSettings(), tokenEnvironment: TokenEnvironment?,
         broadcastPressure: BroadcastPressure = BroadcastPressure(), webhooks: WebhookDelivery? = nil,
         app: String = AppChannelID.defaultApp, log: GatewayLog) {
        self.app = app
        self.loop = loop
        self.apns = apns
        self.reader = reader
        self.store = store
        self.clock = clock
        self.settings = settings
        self.tokenEnvironment = tokenEnvironment
        self.broadcastPressure = broadcastPressure
        self.log = log
        self.webhooks = webhooks
        metrics = PersonalMetrics(app: app, apns: apns, credentialsRejected: webhooks?.credentialsReporter(app: app))
    }

    /// The queue's figures now; call on ``loop``.
    package func metricsSnapshot() -> PersonalSnapshot {
        var snapshot = metrics.snapshot(running: jobs.values.map(\.job), inFlight: inFlight)
        snapshot.jobsRunning = Set(jobs.values.map(\.id)).count
        snapshot.slicesRunning = jobs.values.count { $0.slice != nil }
        snapshot.slicesStarted = jobBoard.slicesStarted
        return snapshot
    }

    /// Starts fanning out a durable job (any thread; the work moves to the personal loop).
    func run(_ record: PersonalJobRecord) {
        loop.execute { [self] in start(record) }
    }

    /// Armed while the stored jobs wait for the registry copy (``resumeStoredJobs(_:openChannels:once:broken:)``).
    private var resumeTimer: LoopTimer?

    /// Resumes `stored`, the jobs left `pending` or `running` in the store (any thread): each
    /// continues from its saved progress, so what APNs accepted before the restart is not sent
    /// again. The caller reads them before the API can store a new job: a read here, on the
    /// personal loop, could come after such a job's commit (a late loop, or a cluster's wait for
    /// its registry copy) and start it a second time beside the intake's ``run(_:)``, or before
    /// its kickoff's channel is known open here, which expires it at once.
    /// `openChannels` are the channels kickoffs may name (the active ones); a kickoff into any
    /// other is cancelled. A job that fails its check is not run: `broken` gets every such job
    /// with the reason (on the personal loop).
    package func resumeStoredJobs(_ stored: [PersonalJobRecord], openChannels: Set<String>,
                                  once registryIsReady: @escaping @Sendable () -> Bool = { true },
                                  broken: @escaping @Sendable ([String: String]) -> Void) {
        loop.execute { [self] in
            kickoffChannels = KickoffChannels(open: openChannels)
            // The app's own jobs: each app's dispatcher resumes its own.
            resume(stored.filter { $0.app == app }, once: registryIsReady, broken: broken)
        }
    }

    /// Starts the stored jobs once `registryIsReady` (a cluster gateway's copy of the registry
    /// may still be built from the log: a job walking it now would miss tokens), looking again
    /// every tenth of a second until then.
    private func resume(_ stored: [PersonalJobRecord], once registryIsReady: @escaping @Sendable () -> Bool,
                        broken: @escaping @Sendable ([String: String]) -> Void) {
        guard registryIsReady() else {
            let timer = resumeTimer ?? LoopTimer(loop: loop) { [self] in resume(stored, once: registryIsReady, broken: broken) }
            resumeTimer = timer
            timer.schedule(after: .milliseconds(100))
            return
        }
        resumeTimer = nil
        for record in stored { start(record) }
        broken(brokenJobs)
    }

    /// Kickoffs may name this channel from now on (its APNs create is saved). Any thread.
    package func openKickoffs(into apnsChannelID: String) {
        loop.execute { [self] in kickoffChannels.opened(apnsChannelID) }
    }

    /// Cancels the kickoffs into a channel that ends or is deleted (``KickoffChannels``);
    /// `settled` runs on the personal loop once none of them has a send in flight. Any thread.
    package func closeKickoffs(into apnsChannelID: String, settled: @escaping @Sendable () -> Void = {}) {
        loop.execute { [self] in
            kickoffChannels.closed(apnsChannelID) { [self] in
                // No start names the channel any more: which devices it started is forgotten.
                channelsStartedInto.remove(apnsChannelID)
                store.submit([.forgetStarts(channel: apnsChannelID)]) { [log] result in
                    if case .failure(let error) = result { log.warning("forgetting the starts into a closed channel failed; they stay, unused", error: error) }
                }
                settled()
            }
            // On a cluster, the kickoff's slices elsewhere are cancelled through the job bucket.
            jobBoard.cancelKickoffs(into: apnsChannelID)
            for start in scheduled.starts(into: apnsChannelID) { cancelScheduled(start.record.id) { _ in } }
            let now = clock.now()
            for running in jobs.values where running.inputPushChannel == apnsChannelID {
                log.notice("the job's channel ended: targets not sent yet count as expired", job: running.id)
                running.job.expire(at: now)
                advance(running, [])
            }
            settleKickoffs(into: apnsChannelID)
        }
    }

    /// Runs what waits for the channel once none of its jobs has a send in flight.
    private func settleKickoffs(into apnsChannelID: String) {
        guard kickoffChannels.isAwaited(apnsChannelID),
              !jobs.values.contains(where: { $0.inputPushChannel == apnsChannelID && $0.job.inFlightCount > 0 }) else { return }
        for settled in kickoffChannels.takeSettled(apnsChannelID) { settled() }
    }

    /// Stops sending and arming timers, closes the personal APNs connections, saves each job's
    /// progress one last time and closes the reader. Jobs stay `running` in the store and resume
    /// at the next start; requests still in flight are sent again then. In-flight sends get up to
    /// `gracePeriod` for their answers.
    /// Ends the grace of ``shutdown(gracePeriod:)`` at once (an escalated stop): sends still
    /// unanswered count as not sent, and the jobs' progress is saved as in a graceful stop.
    package func cutShutdownShort() {
        apns.cutShutdownShort()
    }

    package func shutdown(gracePeriod: Duration, isCutShort: @escaping @Sendable () -> Bool = { false }) async {
        _ = try? await loop.submit { [self] in
            isStopping = true
            scheduleTimer?.cancel()
            for running in Array(jobs.values) + finishedUnsaved.values {
                running.timer?.cancel()
                running.saveTimer?.cancel()
            }
        }
        await apns.shutdown(gracePeriod: gracePeriod, isCutShort: isCutShort)
        // The jobs running, and those finished whose last save waited for an earlier one.
        let finalSaves = (try? await loop.submit { [self] in
            (Array(jobs.values) + finishedUnsaved.values.filter(\.isSaveOutstanding)).filter { $0.slice == nil }.map { $0.takeSave(now: clock.now()) }
        }) ?? []
        for operations in finalSaves {
            _ = await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                store.submit(operations) { _ in done.resume() }
            }
        }
        // Slices save their checkpoints while this gateway still holds their partitions (it
        // gives them up after this), so their next owners resume from here.
        let slices = (try? await loop.submit { [self] in jobs.values.filter { $0.slice != nil } }) ?? []
        for running in slices {
            _ = await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                loop.execute { [self] in
                    guard let slice = running.slice else { return done.resume() }
                    let save = running.takeSliceSave(now: clock.now())
                    jobBoard.save(SharedJobPlan.SliceKey(jobID: running.id, slice: slice), checkpoint: save.checkpoint,
                                isFinished: save.isFinished, writes: save.writes) { _ in done.resume() }
                }
            }
        }
        _ = try? await loop.submit { [self] in
            jobBoard.stop()
            jobs = [:]
            finishedUnsaved = [:]
            reader.close()
        }
    }

    // MARK: Driving a job

    private func start(_ record: PersonalJobRecord) {
        guard !isStopping, jobs[record.id] == nil, record.status != .done else { return }
        let stored: StoredJob
        do {
            stored = try StoredJob(record)
        } catch {
            log.error("the stored job cannot run: \(error); it is shown as broken and never sent", job: record.id)
            brokenJobs[record.id] = error.description
            return
        }
        if record.status == .pending, let at = record.startAt, at > clock.now() {
            scheduled.add(record, inputPushChannel: stored.inputPushChannel)
            return armScheduleTimer()
        }
        let record = record.startAt == nil ? record : scheduledStartBegins(record, stored)
        let retries: [PersonalJobRetry]
        do {
            retries = try reader.retriesDue(jobID: record.id, at: UnixTime(nanoseconds: .max), limit: .max)
        } catch {
            log.error("reading the job's retries failed; it resumes at the next start", job: record.id, error: error)
            return
        }
        let kind: TokenKind = stored.event == "start" ? .pushToStart : .update
        let running = PersonalJobRun(record: record, retries: retries, audience: stored.audience, tokenKind: kind,
                                            inputPushChannel: stored.inputPushChannel, settings: settings,
                                            seed: UInt64(bitPattern: clock.now().nanoseconds))
        // A kickoff into a channel that has ended since it was accepted is cancelled at once.
        if let channel = stored.inputPushChannel, !kickoffChannels.isOpen(channel) { running.job.expire(at: clock.now()) }
        jobs[record.id] = running
        noteStartsBeginning(running)
        running.noteProgress()
        for job in jobs.values { advance(job, []) }
    }

    /// A scheduled start whose time has come (or that resumes after a restart): stamped with the
    /// time it is sent, and, while its channel is open, made known to the channel as the
    /// audience its rollovers start again (``scheduledStartBegan``).
    private func scheduledStartBegins(_ record: PersonalJobRecord, _ stored: StoredJob) -> PersonalJobRecord {
        let record = stampedForSending(record)
        if let channel = stored.inputPushChannel, kickoffChannels.isOpen(channel) { announceStart(of: record, stored, into: channel) }
        return record
    }

    /// A job stored ahead of its time, with its payload stamped now, the time it is sent.
    func stampedForSending(_ record: PersonalJobRecord) -> PersonalJobRecord {
        var record = record
        if let payload = LiveActivityPayload.restamped(record.payload, timestamp: clock.now()),
           payload.count <= LiveActivityPush.maximumPayloadSize {
            record.payload = payload
        }
        return record
    }

    /// On a cluster, tells the channels again of the scheduled kickoffs into `apnsChannelID`
    /// that the job bucket shows started (a gateway taking the channel up). Any thread.
    package func announceStartedKickoffs(into apnsChannelID: String) {
        loop.execute { [self] in jobBoard.announceStarts(into: apnsChannelID) }
    }

    /// Tells the channels that a scheduled kickoff started into `apnsChannelID` (``scheduledStartBegan``).
    package func announceStart(of record: PersonalJobRecord, _ stored: StoredJob, into apnsChannelID: String) {
        guard case .follows(let topic) = stored.audience,
              let template = KickoffTemplate(payload: record.payload, follows: topic, priority: record.priority) else { return }
        scheduledStartBegan?(template, apnsChannelID)
    }

    /// Runs a slice of a cluster's job from `checkpoint` (on the loop; the cluster's job board decides).
    /// A slice is not tied to a kickoff's channel here: that channel's owner may be another
    /// gateway (docs/cluster.md, "Personal jobs on the cluster").
    /// `maximumWindow` caps the fan-out window, and with it what the slice's checkpoint lists.
    /// `expiredAt`: the job was cancelled then (its kickoff's channel ended).
    /// Every push of the slice carries `fence` to the moment it leaves (withheld if the
    /// partition moved meanwhile).
    package func runSlice(_ key: SharedJobPlan.SliceKey, of record: PersonalJobRecord, checkpoint: FanOutCheckpoint,
                  maximumWindow: Int, expiredAt: UnixTime?, fence: (any SideEffectFence)?) throws(StoredJob.Broken) {
        guard !isStopping else { return }
        let stored = try StoredJob(record)
        let record = record.startAt == nil ? record : stampedForSending(record)
        let limits = FanOutJob.Limits(window: min(settings.window, maximumWindow), maxInFlight: settings.maxInFlight,
                                      pageSize: min(settings.pageSize, maximumWindow))
        let running = PersonalJobRun(record: record, slice: key.slice, checkpoint: checkpoint, audience: stored.audience,
                                     tokenKind: stored.event == "start" ? .pushToStart : .update, inputPushChannel: stored.inputPushChannel,
                                     limits: limits, settings: settings, seed: UInt64(bitPattern: clock.now().nanoseconds))
        guard jobs[running.runKey] == nil else { return }
        if let expiredAt { running.job.expire(at: expiredAt) }
        running.fence = fence
        jobs[running.runKey] = running
        noteStartsBeginning(running)
        running.noteProgress()
        for job in jobs.values { advance(job, []) }
    }

    /// Ends the slices of a cluster's job running here as if they expired at `time` (its
    /// kickoff was cancelled on the channel owner's gateway).
    package func expireSlices(ofJob jobID: String, at time: UnixTime) {
        for running in jobs.values where running.id == jobID && running.slice != nil {
            running.job.expire(at: time)
            advance(running, [])
        }
    }

    /// Stops a slice at once, without saving: its partition is no longer this gateway's, and
    /// the next owner resumes it from its last save. Answers still due are ignored.
    package func stopSlice(_ key: SharedJobPlan.SliceKey) {
        guard let running = jobs.removeValue(forKey: PersonalJobRun.sliceKey(jobID: key.jobID, key.slice)) else { return }
        running.isStopped = true
        running.timer?.cancel()
        running.saveTimer?.cancel()
        running.fetchRetry?.cancel()
        for job in jobs.values { advance(job, []) }
    }

    /// How soon a cluster slice reads a page again that could not be read.
    static let sliceReadRetry: Duration = .seconds(1)

    /// A cluster slice's page could not be read: its registry partition may be moving (a
    /// partition let go is refused to its readers at once, and its slices are stopped next), or
    /// the read failed for a moment. Ending the walk there would save the slice as finished
    /// with the rest of its audience unsent; it reads the page again a moment later instead,
    /// unless it is stopped meanwhile.
    private func readAgain(cursor: String?, limit: Int, for running: PersonalJobRun, after error: StoreError) {
        log.warning("reading the slice's audience failed: \(error); reading it again in \(Self.sliceReadRetry)", job: running.id)
        running.fetchRetry?.cancel()
        let timer = LoopTimer(loop: loop) { [weak self, weak running] in
            guard let self, let running, !isStopping, jobs[running.runKey] === running else { return }
            perform(.fetchTargets(after: cursor, limit: limit), for: running)
            advance(running, [])
        }
        running.fetchRetry = timer
        timer.schedule(after: Self.sliceReadRetry)
    }

    /// Carries out `actions`, then asks the job for more until it has nothing to do now.
    private func advance(_ running: PersonalJobRun, _ actions: [FanOutJob.Action]) {
        var actions = actions
        while true {
            for action in actions { perform(action, for: running) }
            guard !isStopping, jobs[running.runKey] === running else { return }
            let more = running.job.nextSends(now: clock.now(), sendLimit: sendAllowance(for: running))
            if more.isEmpty { break }
            actions = more
        }
        if running.job.isFinished {
            running.noteEnd()
            metrics.jobFinished(running.job)
            jobs[running.runKey] = nil
            finishedUnsaved[running.runKey] = running
            running.timer?.cancel()
            running.saveTimer?.cancel()
            for job in jobs.values { advance(job, []) }
        }
        saveIfDue(running)
    }

    /// New sends `running` may start: its even share of `maxInFlight` (of `yieldInFlight` while
    /// the broadcast path is slowed down), within what is free.
    private func sendAllowance(for running: PersonalJobRun) -> Int {
        let limit = settings.yieldInFlight > 0 && broadcastPressure.isUnderPressure ? min(settings.yieldInFlight, settings.maxInFlight)
                                                                              : settings.maxInFlight
        let share = max(1, limit / max(1, jobs.count))
        return max(0, min(limit - inFlight, share - running.job.inFlightCount))
    }

    private func perform(_ action: FanOutJob.Action, for running: PersonalJobRun) {
        switch action {
        case .fetchTargets(let cursor, let limit):
            let page: (tokens: [String], exhausted: Bool)
            do {
                page = try running.audience.page(after: cursor, limit: limit, kind: running.tokenKind, app: app, environment: tokenEnvironment,
                                                 before: running.slice?.upperBound, reader: reader)
            } catch {
                if running.slice != nil { return readAgain(cursor: cursor, limit: limit, for: running, after: error) }
                // The job keeps what it has; the rest of the audience is not reachable now.
                log.error("reading the job's audience failed; the rest of it is not sent", job: running.id, error: error)
                page = ([], true)
            }
            running.job.targetsFetched(leavingOutStarted(page.tokens, for: running), through: page.tokens.last, exhausted: page.exhausted,
                                       now: clock.now())
            running.noteProgress()
        case .send(let token, _, let target):
            guard !isStopping else { return }
            // A token stored by an older, laxer version (odd length, not hex) is dead-lettered
            // as broken rather than sent for APNs to refuse.
            guard TokenRegistration.isWellFormedToken(token) else {
                for action in running.job.outcome(of: target, result: .permanent(reason: Self.invalidStoredTokenReason), now: clock.now()) {
                    perform(action, for: running)
                }
                return
            }
            send(token, as: target, for: running)
        case .armTimer(let time):
            let timer = running.timer ?? LoopTimer(loop: loop) { [self] in
                guard !isStopping, jobs[running.runKey] === running else { return }
                advance(running, running.job.timerFired(now: clock.now()))
            }
            running.timer = timer
            timer.schedule(after: max(Duration.zero, time - clock.now()))
        case .deactivateToken(let token, let timestampMilliseconds):
            let now = clock.now()
            // Without APNs' timestamp the 410 alone decides: anything registered until now goes.
            let apnsTime = timestampMilliseconds.map { UnixTime(nanoseconds: $0 * 1_000_000) } ?? now
            // Counted when the save commits: the store decides whether the token is deactivated.
            running.record(.deactivateToken(token, unlessRegisteredAfter: apnsTime, at: now))
            metrics.deadLettered(reason: PersonalDeliveryPolicy.tokenDeadReason)
            // Listed with the other failures, so the dead letters account for every failed target.
            running.record(.deadLetter(DeadLetterRecord(jobID: running.id, token: token, reason: PersonalDeliveryPolicy.tokenDeadReason,
                                                        at: now)))
        case .deadLetter(let token, let reason):
            metrics.deadLettered(reason: reason)
            running.record(.deadLetter(DeadLetterRecord(jobID: running.id, token: token, reason: reason, at: clock.now())))
        }
    }

    /// A kickoff begins here (new, resumed or a slice): whether its pages must be looked up
    /// against the recorded starts (``PersonalJobRun/mayMeetRecordedStarts``), and the other
    /// kickoffs into its channel must now look theirs up, since this one's starts are saved as it
    /// goes. A failed read looks up, as before.
    private func noteStartsBeginning(_ running: PersonalJobRun) {
        guard let channel = running.startsChannel else { return }
        var others = false
        for other in jobs.values where other !== running && other.startsChannel == channel {
            other.mayMeetRecordedStarts = true
            others = true
        }
        let recorded: Bool
        do {
            recorded = try reader.hasStarts(into: channel)
        } catch {
            log.error("reading whether devices were started into the channel failed; every page is looked up", job: running.id, error: error)
            recorded = true
        }
        running.mayMeetRecordedStarts = others || recorded || channelsStartedInto.contains(channel)
    }

    /// `tokens` (a page of a kickoff's audience) without the devices already started into its
    /// channel, by a save of any job (the store) or by a start into it here (held as a target by
    /// one still running, or started and not saved yet by one running or finished with its last
    /// save still in the store): a device is started at most once per APNs
    /// channel, that is per generation of a match, whatever kickoffs, repeats and rollovers ask
    /// (docs/personal-pushes.md, "One start per device and generation"). A failed read of the
    /// store leaves nobody out: a start twice rather than none.
    private func leavingOutStarted(_ tokens: [String], for running: PersonalJobRun) -> [String] {
        guard let channel = running.startsChannel, !tokens.isEmpty else { return tokens }
        let others = jobs.values.filter { $0 !== running && $0.startsChannel == channel }
        let stored: Set<String>
        do {
            stored = running.mayMeetRecordedStarts ? try reader.startedTokens(among: tokens, into: channel) : []
        } catch {
            log.error("reading which devices were started into the channel failed; this page is not narrowed", job: running.id, error: error)
            stored = []
        }
        // Built once a page; empty unless another kickoff into the channel runs or awaits its last save.
        var startedOrHeldByOthers = Set((others + finishedUnsaved.values.filter { $0.startsChannel == channel }).flatMap(\.startsNotStored))
        for other in others { startedOrHeldByOthers.formUnion(other.job.heldTokens) }
        let kept = tokens.filter { token in !stored.contains(token) && !startedOrHeldByOthers.contains(token) }
        metrics.startsLeftOut += tokens.count - kept.count
        return kept
    }

    private func send(_ token: String, as target: FanOutJob.TargetID, for running: PersonalJobRun) {
        // Fields read one by one: a copy of the whole job would make the next mutation copy its tables.
        let push = LiveActivityPush(deviceToken: token, payload: running.job.payload,
                                    priority: running.job.priority == 5 ? .powerConsiderate : .immediate,
                                    expiration: running.job.expiration.map { .at($0) })
        inFlight += 1
        apns.send(push, fence: running.fence) { [self] result in
            inFlight -= 1
            // An answer that comes in the shutdown's grace still counts (and records its start),
            // so the last save holds it.
            guard jobs[running.runKey] === running else { return }
            switch result {
            case .success:
                if let channel = running.startsChannel {
                    running.started(token)
                    if !running.hasNotedAStart {
                        running.hasNotedAStart = true
                        channelsStartedInto.insert(channel)
                    }
                }
            case .failure(let error): log.debug("APNs push failed", job: running.id, apnsID: error.requestID, token: RedactedToken(token), error: error)
            }
            running.noteProgress()
            let outcome = Self.outcome(of: result, repeatable: running.tokenKind != .pushToStart)
            for action in running.job.outcome(of: target, result: outcome, now: clock.now()) {
                perform(action, for: running)
            }
            // Stopping, nothing more starts: no new sends, and what waits for the channel's
            // kickoffs to settle (its end) waits for the next start as before.
            guard !isStopping else { return }
            if let channel = running.inputPushChannel, running.job.inFlightCount == 0 { settleKickoffs(into: channel) }
            advanceAtTurnEnd(running)
        }
    }

    private func advanceAtTurnEnd(_ running: PersonalJobRun) {
        if !running.isAnswered {
            running.isAnswered = true
            answeredJobs.append(running)
        }
        let timer = turnEnd ?? LoopTimer(loop: loop) { [unowned self] in
            let answered = answeredJobs
            answeredJobs.removeAll(keepingCapacity: true)
            for running in answered {
                running.isAnswered = false
                if !isStopping, jobs[running.runKey] === running { advance(running, []) }
            }
        }
        turnEnd = timer
        if !timer.isScheduled { timer.schedule(after: .zero) }
    }

    /// Saves the job's progress now, or arms its save timer for when the interval has passed.
    private func saveIfDue(_ running: PersonalJobRun) {
        guard !isStopping else { return }
        let now = clock.now()
        if running.job.isFinished, !running.isSaveOutstanding { finishedUnsaved[running.runKey] = nil }
        switch running.saveTiming(now: now, interval: settings.saveInterval) {
        case .notNeeded:
            return
        case .at(let due):
            let timer = running.saveTimer ?? LoopTimer(loop: loop) { [self] in saveIfDue(running) }
            running.saveTimer = timer
            if !timer.isScheduled { timer.schedule(after: max(Duration.zero, due - now)) }
        case .now where running.slice != nil:
            saveSlice(running, now: now)
        case .now:
            let operations = running.takeSave(now: now, outbox: webhooks?.outbox)
            let id = running.id
            store.submit(summarizing: operations) { [self] result in
                loop.execute { [self] in
                    switch result {
                    case .success(let summary):
                        metrics.tokensDeactivated += summary.tokensDeactivated
                        running.saveEnded(failed: nil)
                        saveIfDue(running)
                    case .failure(let error):
                        log.error("saving the job's progress failed; trying again in a second", job: id, error: error)
                        running.saveEnded(failed: operations)
                        let timer = running.saveTimer ?? LoopTimer(loop: loop) { [self] in saveIfDue(running) }
                        running.saveTimer = timer
                        timer.schedule(after: .seconds(1))
                    }
                }
            }
        }
    }

    /// Saves a slice: its dead letters and deactivations to this gateway's store, then its
    /// checkpoint to the cluster's job bucket (``PersonalJobBoard/save(_:checkpoint:isFinished:writes:completion:)``).
    /// A slice stopped meanwhile saves nothing more; a finished one tells the board once
    /// its last save is stored.
    private func saveSlice(_ running: PersonalJobRun, now: UnixTime) {
        guard let slice = running.slice, !running.isStopped else { return }
        let shared = jobBoard
        let save = running.takeSliceSave(now: now)
        let key = SharedJobPlan.SliceKey(jobID: running.id, slice: slice)
        shared.save(key, checkpoint: save.checkpoint, isFinished: save.isFinished, writes: save.writes) { [self] result in
            switch result {
            case .success(let deactivated):
                metrics.tokensDeactivated += deactivated
                running.saveEnded(failed: nil)
                // A run that finished while this save was out makes its last save now.
                if save.endsRun { shared.sliceRunEnded(key) } else if !running.isStopped { saveIfDue(running) }
            case .failure(let error):
                guard !running.isStopped else { return }
                log.error("saving the slice's progress failed; trying again in a second", job: running.id, error: error)
                running.saveEnded(failed: save.writes)
                let timer = running.saveTimer ?? LoopTimer(loop: loop) { [self] in saveIfDue(running) }
                running.saveTimer = timer
                timer.schedule(after: .seconds(1))
            }
        }
    }

    // MARK: Mapping

    /// The dead-letter reason of a stored token that is not a well-formed device token.
    static let invalidStoredTokenReason = "InvalidStoredToken"

    /// What the delivery policy makes of an APNs answer (table in docs/personal-pushes.md).
    /// `repeatable`: whether the push may reach a device twice without harm (an update repeats
    /// the state shown; a second push-to-start starts a second activity).
    static func outcome(of result: Result<APNsResponse, APNsError>, repeatable: Bool) -> PersonalOutcome {
        guard case .failure(let error) = result else { return .accepted }
        // Never sent, or handed back by every connection tried: not an answer, not an attempt.
        if error.isUnprocessed { return .notProcessed }
        // Sent, never answered: APNs may have delivered it.
        if error.isUnanswered, !repeatable { return .unconfirmed }
        switch error.disposition {
        case .retryWithBackoff, .refreshTokenAndRetry: return .retryLater
        case .retryOnNewConnection: return .retryOnNewConnection
        case .backOffToken: return .throttledToken
        case .tokenDead: return .tokenDead(timestampMilliseconds: error.timestampMilliseconds)
        case .configuration: return .configuration(reason: reasonName(of: error))
        case .drop, .channelGone, .backOffChannel: return .permanent(reason: reasonName(of: error))
        case .withheld: return .notProcessed
        }
    }

    private static func reasonName(of error: APNsError) -> String {
        if let name = error.reason?.name, !name.isEmpty { return name }
        return error.status.map { "HTTP\($0)" } ?? "NoResponse"
    }
}
