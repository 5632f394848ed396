import Foundation
import LoadKit

/// `soak`: the gateway under steady load while it is killed with `kill -9` at random moments,
/// its disk is filled and freed, and slow clients stay attached; it checks what a crash must
/// never cost.
///
/// Load: events in batches to a set of channels; channels created, given an event, then kept,
/// ended or deleted; personal jobs (kickoffs and `POST /v1/personal`) to audiences of their own,
/// some tokens of which APNs answers 410. Faults, at moments drawn from `--seed`
/// (``SoakSchedule``): each kill is followed by a restart on the same data and port, and before
/// the load resumes every acknowledged event must be stored, every channel in the life its
/// acknowledged requests gave it, and the APNs channels exactly those the gateway accounts for.
/// At the end every job must be done with exact counts and its tokens reached, every end and
/// delete finished at APNs, and the slow clients cut by their deadlines without hurting the
/// real clients.
struct Soak {
    struct Options {
        var seconds = 150.0
        var kills = 3
        /// Seconds the disk stays full once the store refuses writes; 0: no disk episode.
        var diskSeconds = 5.0
        var seed: UInt64 = 1
        /// Channels the events go to for the whole run (the first also takes the kickoffs).
        var channels = 20
        /// Push-to-start tokens in each job's audience.
        var tokens = 1_500
        var slowClientsPerKind = 4
        /// The gateway's `http` head, body and idle deadlines: shorter than its defaults, so that
        /// each kind of slow client is cut several times between two kills.
        var deadlines = SlowClients.Deadlines(head: 5, body: 10, idle: 15)
        var diskFault = DiskFault.Choice.auto
        var diskBytes = 128 << 20
        /// The mock's answer delay, standing for APNs' round trip (it keeps creates and jobs in
        /// flight long enough for kills to meet them).
        var apnsLatencyMilliseconds = 20
        var personalInFlight = 8
        var eventConnections = 4
        var requestsPerSecondPerConnection = 50.0
        var maxBatch = 10
        var churnInterval = 0.3
        var jobInterval = 5.0
        /// Seconds after its deadline by which a slow client's cut still counts as on time.
        var cutTolerance = 2.0
    }

    static let name = "soak"
    /// The event channels' pace: every change pushed within a quarter of a second.
    static let basePolicy = ChannelCreation.unthrottledPolicy

    let options: Options
    let settings: LoadSettings

    func run() throws -> ScenarioResult {
        let schedule: SoakSchedule
        do {
            schedule = try SoakSchedule(seconds: options.seconds, kills: options.kills, diskEpisodes: options.diskSeconds > 0 ? 1 : 0,
                                        diskSeconds: max(options.diskSeconds, 1), seed: options.seed)
        } catch { throw LoadError("soak: \(error)") }
        guard options.tokens >= 2 else { throw LoadError("soak: --tokens needs at least 2 (one of them unregistered at APNs)") }
        let log = ScenarioLog(Self.name)
        let stage = try SoakStage(options: options, settings: settings)
        var keep = true
        defer { stage.tearDown(keeping: keep) }
        let target = stage.gateway.target, mock = stage.mock
        log.say(String(format: "%.0f s, %d kills, disk full for %.0f s (%@), seed %llu; %d channels, %d tokens per job; gateway on port %d",
                       options.seconds, schedule.kills, options.diskSeconds, stage.disk.mode.rawValue, options.seed, options.channels,
                       options.tokens, target.port))
        let ledger = SoakLedger(), gate = RequestGate()
        let base = (0..<options.channels).map { String(format: "soak-%03d", $0) }
        let apnsIDs = try ChannelCreation.create(base, policy: Self.basePolicy, connections: 4, connect: target.connector)
        for id in base {
            ledger.add(id, churned: false, life: .active)
            ledger.saw(id, apnsID: apnsIDs[id]!)
        }

        let runStart = monotonicNanoseconds()
        let tally = SoakTally(runStart: runStart), stop = StopFlag(), finished = DispatchGroup()
        let idleLimit = options.deadlines.idle / 2
        let slow = SlowClients(target: target, gate: gate, deadlines: options.deadlines, perKind: options.slowClientsPerKind,
                               tolerance: options.cutTolerance, runStart: runStart, channel: base[0])
        slow.start()
        SoakEventTraffic(channels: base, connections: options.eventConnections, requestsPerSecondPerConnection: options.requestsPerSecondPerConnection,
                         maxBatch: options.maxBatch, seed: options.seed)
            .start(target: target, gate: gate, idleLimit: idleLimit, ledger: ledger, tally: tally, stop: stop, finished: finished)
        let churn = SoakChannelChurn(interval: options.churnInterval, seed: options.seed &+ 1_000)
        let personal = SoakPersonalTraffic(tokensPerJob: options.tokens, unregisteredPerJob: max(1, options.tokens / 50),
                                           interval: options.jobInterval, kickoffChannel: base[0])
        let client: @Sendable () -> GatedClient = { GatedClient(target: target, gate: gate, idleLimit: idleLimit) }
        for work: @Sendable () -> Void in [{ churn.run(client: client(), ledger: ledger, tally: tally, stop: stop) },
                                           { personal.run(client: client(), mock: mock, ledger: ledger, tally: tally, stop: stop) }] {
            finished.enter()
            Thread { work(); finished.leave() }.start()
        }

        let verifier = SoakVerifier(target: target, ledger: ledger, mock: mock)
        var checkpoints: [SoakCheckpoint] = []
        var episode: SoakDiskEpisode?
        var cutsBefore = 0
        func check(_ label: String, at: Double, restart: Double? = nil) throws {
            var checkpoint = SoakCheckpoint(label: label, at: at, restartSeconds: restart, segment: tally.closeSegment())
            let cuts = slow.cutsSoFar
            (checkpoint.slowClientsCut, cutsBefore) = (cuts - cutsBefore, cuts)
            try verifier.check(&checkpoint, settle: 20)
            log.say(SoakReport.line(checkpoint))
            checkpoints.append(checkpoint)
        }
        func holdLoad() throws {
            gate.close()
            guard gate.waitUntilIdle(timeout: 90) else { throw LoadError("soak: requests still under way 90 s after the load was held") }
        }
        for moment in schedule.moments {
            sleep(untilMonotonic: runStart + Int64(moment.at * 1e9))
            switch moment.fault {
            case .kill:
                gate.gatewayGoingDown()
                stage.gateway.kill()
                try holdLoad()
                let restart = try stage.gateway.restart()
                gate.gatewayUp()
                try check("kill \(checkpoints.count { $0.restartSeconds != nil } + 1)", at: moment.at, restart: restart)
            case .diskFull(let seconds):
                episode = try SoakDiskEpisode(holding: seconds, disk: stage.disk, gateway: stage.gateway, tally: tally)
                try holdLoad()
                try check("disk full", at: moment.at)
                tally.setDiskFull(false)
            }
            gate.open()
        }
        sleep(untilMonotonic: runStart + Int64(options.seconds * 1e9))
        stop.set()
        finished.wait()
        try check("end", at: options.seconds)
        log.say("load stopped; waiting for the personal jobs and the deletions")
        let final = try SoakFinalAudit(verifier: verifier, timeout: 120)
        let cuts = slow.stop()
        let result = SoakReport(options: options, schedule: schedule, diskMode: stage.disk.mode, checkpoints: checkpoints, episode: episode,
                                final: final, cuts: cuts, ledger: ledger, tally: tally, adoptions: stage.transcriptLines(containing: "adopted APNs channel"),
                                recordingFull: stage.mock.counters().total >= SoakStage.recordingCapacity,
                                seconds: Double(monotonicNanoseconds() - runStart) / 1e9).result
        for line in SoakReport.printed(result) { log.say(line) }
        keep = !result.passed
        if keep { log.say("the gateway's output of every start is kept in \(stage.transcript)") }
        return result
    }
}
