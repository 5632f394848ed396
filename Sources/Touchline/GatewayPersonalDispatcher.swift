import APNs
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Runs personal fan-out jobs, isolated from broadcasts: its own loop and thread, its own APNs
/// connection pool and its own read connection, so a million-token backlog never delays a
/// broadcast (nothing on the broadcast path waits for anything here).
///
/// Each job is a ``FanOutJob`` (the pure state machine); this class carries out its actions:
/// reads audience pages from the registry, sends the job's payload (encoded once) to each token,
/// maps APNs answers to ``PersonalOutcome``, and writes progress, dead letters and 410
/// deactivations through the store's group commit, together, every `checkpointInterval`
/// outcomes and at the end.
///
/// **Thread confinement:** everything but ``run(_:)`` and ``shutdown()`` runs on ``loop``;
/// `@unchecked Sendable` only so loop jobs can capture it.
final class GatewayPersonalDispatcher: @unchecked Sendable {
    let loop: EventLoop
    private let connections: APNsConnections
    private let reader: SQLiteTokenReader
    private let store: StoreWriter
    private let clock: any WallClock
    private let limits: FanOutJob.Limits
    private let checkpointInterval: Int
    private var jobs: [String: RunningJob] = [:]
    private var isStopping = false

    /// One job in progress, with the writes not yet handed to the store.
    private final class RunningJob {
        let id: String
        let audience: GatewayPersonalAudience
        let tokenKind: TokenKind
        var job: FanOutJob
        var cursor: String?
        var timer: LoopTimer?
        var unsavedOutcomes = 0
        var unsavedWrites: [TokenOperation] = []
        var hasStarted = false

        init(id: String, audience: GatewayPersonalAudience, tokenKind: TokenKind, job: FanOutJob, cursor: String?) {
            self.id = id
            self.audience = audience
            self.tokenKind = tokenKind
            self.job = job
            self.cursor = cursor
        }
    }

    /// `connections` must live on `loop`; `reader` is used on `loop` only from now on.
    init(loop: EventLoop, connections: APNsConnections, reader: SQLiteTokenReader, store: StoreWriter, clock: any WallClock,
         limits: FanOutJob.Limits = FanOutJob.Limits(), checkpointInterval: Int = 200) {
        self.loop = loop
        self.connections = connections
        self.reader = reader
        self.store = store
        self.clock = clock
        self.limits = limits
        self.checkpointInterval = checkpointInterval
    }

    /// Starts fanning out a durable job (any thread; the work moves to the personal loop).
    func run(_ record: PersonalJobRecord) {
        loop.execute { [self] in start(record) }
    }

    /// Stops sending and arming timers, closes the personal APNs connections and the reader.
    /// Jobs stay `running` in the store.
    func shutdown() async {
        _ = try? await loop.submit { [self] in
            isStopping = true
            for running in jobs.values { running.timer?.cancel() }
        }
        await connections.shutdown()
        _ = try? await loop.submit { [self] in
            jobs = [:]
            reader.close()
        }
    }

    // MARK: Driving a job

    private func start(_ record: PersonalJobRecord) {
        guard !isStopping, jobs[record.id] == nil else { return }
        guard let audience = GatewayPersonalAudience(storedText: record.audience) else {
            print("touchline: personal job \(record.id) has an unreadable audience; skipped")
            return
        }
        let kind: TokenKind = Self.event(of: record.payload) == "start" ? .pushToStart : .update
        let job = FanOutJob(payload: record.payload, priority: record.priority, expiration: record.expiration, limits: limits,
                            seed: UInt64(bitPattern: clock.now().nanoseconds))
        let running = RunningJob(id: record.id, audience: audience, tokenKind: kind, job: job, cursor: record.cursor)
        jobs[record.id] = running
        advance(running, [])
    }

    /// Carries out `actions`, then asks the job for more until it has nothing to do now.
    private func advance(_ running: RunningJob, _ actions: [FanOutJob.Action]) {
        var actions = actions
        while true {
            for action in actions { perform(action, for: running) }
            guard !isStopping, jobs[running.id] === running else { return }
            let more = running.job.nextSends(now: clock.now())
            if more.isEmpty { break }
            actions = more
        }
        if running.job.isFinished {
            jobs[running.id] = nil
            running.timer?.cancel()
            save(running, status: .done)
        } else if running.unsavedOutcomes >= checkpointInterval || (running.job.inFlightCount == 0 && running.unsavedOutcomes > 0) {
            save(running, status: nil)
        }
    }

    private func perform(_ action: FanOutJob.Action, for running: RunningJob) {
        switch action {
        case .fetchTargets(let cursor, let limit):
            let page: (tokens: [String], exhausted: Bool)
            do {
                page = try running.audience.page(after: cursor, limit: limit, kind: running.tokenKind, reader: reader)
            } catch {
                // The job keeps what it has; the rest of the audience is not reachable now.
                print("touchline: reading the audience of personal job \(running.id) failed: \(error)")
                page = ([], true)
            }
            let next = page.tokens.last ?? cursor
            running.job.targetsFetched(page.tokens, cursor: next, exhausted: page.exhausted, now: clock.now())
            if next != running.cursor {
                running.cursor = next
                running.unsavedOutcomes = max(running.unsavedOutcomes, 1)
            }
        case .send(let token, _):
            guard !isStopping else { return }
            send(token, for: running)
        case .armTimer(let time):
            let timer = running.timer ?? LoopTimer(loop: loop) { [self] in
                guard !isStopping, jobs[running.id] === running else { return }
                advance(running, running.job.timerFired(now: clock.now()))
            }
            running.timer = timer
            let delay = time - clock.now()
            timer.schedule(after: delay > .zero ? delay : .zero)
        case .deactivateToken(let token, let timestampMilliseconds):
            let now = clock.now()
            // Without APNs' timestamp the 410 alone decides: anything registered until now goes.
            let apnsTime = timestampMilliseconds.map { UnixTime(nanoseconds: $0 * 1_000_000) } ?? now
            running.unsavedWrites.append(.deactivateToken(token, unlessRegisteredAfter: apnsTime, at: now))
        case .deadLetter(let token, let reason):
            running.unsavedWrites.append(.deadLetter(DeadLetterRecord(jobID: running.id, token: token, reason: reason, at: clock.now())))
        }
    }

    private func send(_ token: String, for running: RunningJob) {
        let job = running.job
        let push = LiveActivityPush(deviceToken: token, payload: job.payload,
                                    priority: job.priority == 5 ? .powerConsiderate : .immediate,
                                    expiration: job.expiration.map { .at($0) })
        connections.client.send(push) { [self] result in
            guard !isStopping, jobs[running.id] === running else { return }
            running.unsavedOutcomes += 1
            let actions = running.job.outcome(token: token, result: Self.outcome(of: result), now: clock.now())
            advance(running, actions)
        }
    }

    /// Writes the job's cursor and counts with the dead letters and deactivations gathered
    /// since the last save, all in one commit.
    private func save(_ running: RunningJob, status: PersonalJobStatus?) {
        let counters = running.job.counters
        let counts = PersonalJobCounts(targeted: Int64(counters.targeted), sent: Int64(counters.sent),
                                       failed: counters.failedByReason.mapValues(Int64.init), expired: Int64(counters.expired),
                                       pending: Int64(counters.pending))
        let progress = PersonalJobProgress(jobID: running.id, cursor: running.cursor, counts: counts,
                                           status: status ?? (running.hasStarted ? nil : .running), at: clock.now())
        running.hasStarted = true
        let operations = running.unsavedWrites + [.advanceJob(progress)]
        running.unsavedWrites = []
        running.unsavedOutcomes = 0
        let id = running.id
        store.submit(operations) { result in
            if case .failure(let error) = result { print("touchline: saving personal job \(id) failed: \(error)") }
        }
    }

    // MARK: Mapping

    /// The `aps.event` of a stored payload.
    private static func event(of payload: [UInt8]) -> String? {
        guard case .object(let members)? = try? JSONParser.parse(payload),
              case .object(let aps)? = members.first(where: { $0.name == "aps" })?.value,
              case .string(let event)? = aps.first(where: { $0.name == "event" })?.value else { return nil }
        return event
    }

    /// What the delivery policy makes of an APNs answer (table in docs/personal-pushes.md).
    static func outcome(of result: Result<APNsResponse, APNsError>) -> PersonalOutcome {
        guard case .failure(let error) = result else { return .accepted }
        switch error.disposition {
        case .retryWithBackoff, .refreshTokenAndRetry: return .retryLater
        case .retryOnNewConnection: return .retryOnNewConnection
        case .backOffToken: return .throttledToken
        case .tokenDead: return .tokenDead(timestampMilliseconds: error.timestampMilliseconds)
        case .configuration: return .configuration(reason: reasonName(of: error))
        case .drop, .channelGone, .backOffChannel: return .permanent(reason: reasonName(of: error))
        }
    }

    private static func reasonName(of error: APNsError) -> String {
        if let name = error.reason?.name, !name.isEmpty { return name }
        return error.status.map { "HTTP\($0)" } ?? "NoResponse"
    }
}
