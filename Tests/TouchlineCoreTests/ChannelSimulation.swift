import TouchlineCore

/// One channel in virtual time (``ChannelMachine``), played the way the gateway's shell, the
/// store, APNs, a provider and a cluster's leases would play it, with a seeded random source.
///
/// The provider creates the channel (again, when its create is refused or cut off), sends its
/// events in requests of a few, several at a time, retries whatever is refused, and ends the
/// channel once every event is acknowledged; an operator asks for a rollover now and then. Once
/// created the channel's audience is known, and its activities reach their maximum age within
/// seconds, so it rolls over to new APNs channels several times during the match. The store
/// answers each write after a random delay, in order, and fails some (then the gateway refuses
/// input for a while, as the store's health says); APNs takes each push after a random delay,
/// answers after another, and fails some pushes and creates (throttled, or no answer: the push
/// may or may not have reached it). The channel is restarted from what the store holds (a
/// crash: answers still on the way are lost; one run in four crashes during the create, and a
/// channel found without its APNs id adopts the one a lost answer left, or is created again),
/// its lease lapses and comes back (it is told before its next input, as the shell asks before
/// every push), and its partition is let go and taken up again under a higher fence (loaded
/// from the store). Faults stop at ``Faults/calmAfter`` so the run can settle.
///
/// After every step it checks the invariants:
/// - no acknowledged event is missing from the stored state (its `seq` is covered), and a
///   create is answered only once its APNs channel is stored;
/// - at APNs, on every APNs channel, a push that replaces what devices show (a newer timestamp)
///   never carries an older state than the one it replaces, nor an update after the end;
/// - a running channel never has two pushes in flight (sent, not yet answered);
/// - no push and no rollover call is decided while the gateway does not act for the channel, and
///   no push under an old fence;
/// - once the run has settled after the acknowledged `end`, every APNs channel devices were
///   started on shows an end, and the latest of them the final state.
struct ChannelSimulation {
    typealias Machine = ChannelMachine<TestRules>
    /// How the channel takes an input: the machine itself, or a deliberately broken wrapper (the
    /// negative controls).
    typealias Step = (inout Machine, Machine.Input, UnixTime) -> [Machine.Action]

    struct Faults {
        var storeFailureRate = 0.1
        var pushFailureRate = 0.15
        /// Per second of virtual time.
        var restartRate = 0.01
        var leaseLapseRate = 0.02
        var moveRate = 0.01
        /// No new fault after this much virtual time.
        var calmAfter = Duration.seconds(300)
    }

    static let start = UnixTime(seconds: 1_767_225_600)
    static let policy = ChannelPolicy(minimumInterval: .seconds(1), burst: 3, endGracePeriod: .seconds(10), feedStall: .seconds(30),
                                      maximumActivityAge: .seconds(8))
    static let rolloverInterval = Duration.seconds(4)

    private enum Event {
        case providerSends(TestRequest)
        case storeAnswers(run: Int, Stored, succeeded: Bool)
        case pushArrives(run: Int, String, ChannelEngine.OutgoingPush)
        case apnsAnswers(run: Int, sequence: UInt64, Machine.PushOutcome)
        case deletionAnswered(run: Int)
        case rolloverAnswered(run: Int, Machine.RolloverOutcome)
        case previousEndArrives(run: Int, String, ChannelEngine.OutgoingPush)
        case timer(run: Int, Machine.Timer, armedAs: Int)
        case saveAgain(run: Int)
        case fault
        /// A crash at a chosen moment (in the middle of the create).
        case crash
        case comesBack
        /// An operator asks for a rollover now.
        case operatorAsks
        /// The provider creates the channel (again, when its create was refused or cut off).
        case providerCreates
        /// APNs answered a create: the new channel's id, or nil for a refusal.
        case createAnswered(run: Int, String?)
    }

    /// What one store write carries.
    private enum Stored {
        /// The create intent: the channel stored as `creating`, with no APNs id.
        case intent
        /// The id APNs gave, saved as the channel's.
        case apnsID(String)
        case write(TestWrite)
        case state(ChannelMachineState)
        case status(ChannelStatus)
        /// The channel's settings with its rollover; `save` is what waits for the commit.
        case rollover(ActivityRollover, save: Machine.RolloverSave)
        /// A rollover's successor made the channel's APNs channel, with the rollover.
        case switched(to: String, ActivityRollover)
    }

    /// What the store holds.
    private struct Disk {
        var exists = false
        var state: ChannelMachineState
        var status: ChannelStatus = .creating
        var apnsID: String?
        var rollover = ActivityRollover(generationStartedAt: ChannelSimulation.start)
    }

    private var random: SplitMix64
    private let faults: Faults
    private let step: Step
    private(set) var now = ChannelSimulation.start
    /// When each scheduled event is due and its number, latest first (the next one is last).
    private var due: [(at: Int64, order: Int)] = []
    private var scheduled: [Int: Event] = [:]
    private var order = 0
    private var machine: Machine?
    /// Bumped by every restart and move: what was on the way to an earlier run is dropped.
    private var run = 0
    private var timerArmings: [Machine.Timer: Int] = [:]
    private var disk: Disk
    private var storeFreeAt = ChannelSimulation.start
    private var owned = true
    /// After a failed write the store refuses nothing, but the gateway answers 503 until the
    /// writer's probe commits again.
    private var storeFailingUntil = ChannelSimulation.start
    private var storeWritable: Bool { now >= storeFailingUntil }
    private var fence = Fence(Revision(1))
    private var inFlight: Set<UInt64> = []
    /// What devices show: the newest timestamp APNs took, its state and whether it ended.
    private var shown: [String: (timestamp: UnixTime, seq: Int64, isEnd: Bool)] = [:]
    /// The APNs channels devices were started on (the first, then each rollover's audience).
    private var audiences: Set<String> = []
    /// The APNs channels created so far (`apns-1`, `apns-2`, ...), and those a create whose answer
    /// was lost left behind, for reconciliation to adopt.
    private var created = 0
    private var orphans: [String] = []
    private var createAcknowledged = false
    private let seed: UInt64
    private var unacknowledged: [Int: TestRequest] = [:]
    private var acknowledgedSeqs: Int64 = 0
    private var endAcknowledged = false
    private let lastSeq: Int64
    private(set) var failures: [String] = []
    private(set) var steps = 0
    /// What the run went through, to show that the seeds exercise what the checks are about.
    private(set) var seen = Seen()

    struct Seen {
        var restarts = 0
        var lapses = 0
        var moves = 0
        var failedCommits = 0
        var failedPushes = 0
        /// Successors saved as the channel's APNs channel.
        var rollovers = 0
        /// APNs answers that came while a write was in the store (held by the gate).
        var heldInputs = 0
        /// Requests refused while the store was failing.
        var refusedForStore = 0
        /// Operators' rollovers that began.
        var operatorRollovers = 0
        /// Creates refused (APNs, the store) and asked again.
        var refusedCreates = 0
        /// Channels a restart found without their APNs id, adopted or created again.
        var reconciled = 0

        mutating func add(_ other: Seen) {
            restarts += other.restarts
            lapses += other.lapses
            moves += other.moves
            failedCommits += other.failedCommits
            failedPushes += other.failedPushes
            rollovers += other.rollovers
            heldInputs += other.heldInputs
            refusedForStore += other.refusedForStore
            operatorRollovers += other.operatorRollovers
            refusedCreates += other.refusedCreates
            reconciled += other.reconciled
        }
    }

    init(seed: UInt64, faults: Faults = Faults(), step: @escaping Step = { $0.handle($1, now: $2) }) {
        random = SplitMix64(seed: seed)
        self.seed = seed
        self.faults = faults
        self.step = step
        let engine = ChannelEngine(policy: Self.policy, storage: .noStorage, jitterSeed: seed, now: Self.start)
        disk = Disk(state: ChannelMachineState(engine: engine, contentState: [:], lastSeq: 0))
        // The provider's feed: 10 to 40 events in requests of 1 to 4, sent over a minute or two.
        var seq: Int64 = 0
        var id = 0
        let events = Int64(10 + random.next() % 31)
        var sendAt = Duration.zero
        var requests: [TestRequest] = []
        while seq < events {
            let count = Int64(1 + random.next() % 4)
            requests.append(TestRequest(id: id, kind: .events(Array(seq + 1 ... min(seq + count, events)))))
            seq = min(seq + count, events)
            id += 1
        }
        lastSeq = seq
        for request in requests {
            sendAt += .milliseconds(Int64(random.next() % 4_000))
            unacknowledged[request.id] = request
            schedule(.providerSends(request), after: sendAt)
        }
        schedule(.fault, after: nextFaultDelay())
        schedule(.operatorAsks, after: .seconds(2) + delay(upTo: 10_000))
        schedule(.providerCreates, after: .zero)
        // One run in four crashes while its channel is being created.
        if random.next() % 4 == 0 { schedule(.crash, after: delay(upTo: 1_000)) }
    }

    // MARK: Running

    /// Runs until the channel has ended and settled, or `limit` of virtual time has passed.
    mutating func run(limit: Duration = .seconds(3_600)) {
        let end = Self.start + limit
        while let next = popNext(), next.at <= end {
            now = max(now, next.at)
            steps += 1
            handle(next.event)
            if !failures.isEmpty { return }
        }
        checkSettled()
    }

    private mutating func handle(_ event: Event) {
        switch event {
        case .providerSends(let request):
            guard unacknowledged[request.id] != nil, machine != nil else { return retry(request) }
            perform(feed(.request(request, room: (), storeWritable: storeWritable)))
        case .storeAnswers(let run, let stored, let succeeded):
            if succeeded { apply(stored) } else { storeFailingUntil = max(storeFailingUntil, now + delay(upTo: 3_000)) }
            guard run == self.run else { return }
            switch stored {
            case .write:
                if !succeeded { seen.failedCommits += 1 }
                perform(feed(.writeCompleted(succeeded: succeeded, room: (), storeWritable: storeWritable)))
            case .state where !succeeded:
                // The shell saves a channel whose save failed again, whole, a second later.
                schedule(.saveAgain(run: run), after: .seconds(1))
            case .state, .status: break
            case .rollover(_, let save): perform(feed(.rolloverSaved(save, succeeded: succeeded)))
            case .intent:
                perform(feed(.lifecycle(.intentSaved(succeeded ? .success(()) : .failure(.init("disk full", isStorageFailure: true))))))
            case .apnsID:
                perform(feed(.lifecycle(.idSaved(succeeded ? .success(()) : .failure(.init("disk full", isStorageFailure: true))))))
            case .switched(let successor, _):
                if succeeded { seen.rollovers += 1 }
                perform(feed(.rolloverStep(succeeded ? .switched(to: successor) : .failed)))
            }
        case .pushArrives(let run, let apnsID, let push):
            arrived(push, on: apnsID)
            let outcome = pushOutcome()
            schedule(.apnsAnswers(run: run, sequence: push.sequence, outcome), after: delay(upTo: 300))
        case .apnsAnswers(let run, let sequence, let outcome):
            guard run == self.run else { return }
            inFlight.remove(sequence)
            if case .failed = outcome { seen.failedPushes += 1 }
            if machine?.isWriting == true { seen.heldInputs += 1 }
            perform(feed(.pushAnswered(sequence: sequence, outcome)))
        case .deletionAnswered(let run):
            guard run == self.run else { return }
            perform(feed(.lifecycle(.deletionConfirmed)))
        case .rolloverAnswered(let run, let outcome):
            guard run == self.run else { return }
            perform(feed(.rolloverStep(outcome)))
        case .previousEndArrives(let run, let previous, let push):
            arrived(push, on: previous)
            let ended = isCalm || random.unit() >= faults.pushFailureRate
            schedule(.rolloverAnswered(run: run, ended ? .previousEnded : .failed), after: delay(upTo: 300))
        case .timer(let run, let timer, let armedAs):
            guard run == self.run, timerArmings[timer] == armedAs else { return }
            timerArmings[timer] = nil
            perform(feed(.timerFired(timer)))
        case .saveAgain(let run):
            guard run == self.run, let machine else { return }
            // Not while a write is out: that write carries the whole state.
            if machine.isWriting { return schedule(.saveAgain(run: run), after: .seconds(1)) }
            submit(.state(machine.state))
        case .fault:
            injectFault()
        case .crash:
            crash()
        case .providerCreates:
            create()
        case .createAnswered(let run, let apnsID):
            guard run == self.run else {
                // The answer is lost with the process: APNs keeps the channel, unaccounted for.
                if let apnsID { orphans.append(apnsID) }
                return
            }
            perform(feed(.lifecycle(apnsID.map(ChannelLifecycle.Input.apnsCreated) ?? .apnsCreateFailed("HTTP503", limitReached: false))))
        case .operatorAsks:
            if !isCalm { schedule(.operatorAsks, after: .seconds(5) + delay(upTo: 10_000)) }
            perform(feed(.rolloverRequested(storeWritable: storeWritable)))
        case .comesBack:
            comeBack()
        }
    }

    /// Gives the channel `input`, after telling it of a change of ownership (as the shell asks
    /// before every input).
    private mutating func feed(_ input: Machine.Input) -> [Machine.Action] {
        guard let current = machine?.ownership else { return [] }
        let ownership: Machine.Ownership = owned ? .acting(fence: fence) : .notActing
        var actions: [Machine.Action] = []
        // In place: a copy of the machine per input would dominate a run.
        if current != ownership { actions += step(&machine!, .ownershipChanged(ownership), now) }
        actions += step(&machine!, input, now)
        return actions
    }

    private mutating func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .submit(let write, _):
                answer(write.answers.filter { $0.answer == .refused })
                submit(.write(write))
            case .answerAtOnce(let write), .answerCommitted(let write):
                answer(write.answers)
            case .answerFailed(let write):
                for (id, _) in write.answers { unacknowledged[id].map { retry($0) } }
            case .refuse(let request, let refusal):
                if refusal == .storeFailing { seen.refusedForStore += 1 }
                retry(request)
            case .saveState:
                submit(.state(machine!.state))
            case .saveStatus(let status):
                submit(.status(status))
            case .send(let push, let apnsID, let decidedUnder):
                decided(push, on: apnsID, under: decidedUnder)
            case .arm(let timer, let at):
                let armedAs = (timerArmings[timer] ?? 0) + 1
                timerArmings[timer] = armedAs
                schedule(.timer(run: run, timer, armedAs: armedAs), at: max(at, now) + .milliseconds(Int64(random.next() % 50)))
            case .cancel(let timer):
                timerArmings[timer] = nil
            case .lifecycle(.deleteAtAPNs):
                schedule(.deletionAnswered(run: run), after: delay(upTo: 500))
            case .lifecycle(.saveIntent):
                submit(.intent)
            case .lifecycle(.createAtAPNs):
                let succeeds = isCalm || random.unit() >= faults.pushFailureRate
                if succeeds { created += 1 }
                schedule(.createAnswered(run: run, succeeds ? "apns-\(created)" : nil), after: delay(upTo: 500))
            case .lifecycle(.saveAPNsID(let apnsID)):
                submit(.apnsID(apnsID))
            case .lifecycle(.answerCreated(let waiters)) where !waiters.isEmpty:
                createdAndAnswered()
            case .lifecycle(.answerExisting):
                createdAndAnswered()
            case .lifecycle(.answerRefused):
                seen.refusedCreates += 1
                schedule(.providerCreates, after: .milliseconds(200) + delay(upTo: 2_000))
            case .lifecycle(.forget):
                // The intent never reached the store: the channel is as if never created.
                machine = nil
                run += 1
                timerArmings = [:]
            case .saveRollover(let save):
                submit(.rollover(machine!.rollover, save: save))
            case .rollover(let call):
                perform(call)
            case .beginRollover(let save):
                seen.operatorRollovers += 1
                // The key's quota may refuse it: it did not begin.
                if random.next() % 8 == 0 { perform(feed(.rolloverSaved(save, succeeded: false))) } else { submit(.rollover(machine!.rollover, save: save)) }
            case .sendInShadow, .pushAnswerTaken, .noteFeed, .reportStall, .closeKickoffs, .lifecycle, .rolloverWaitsForOwnership,
                 .refuseRollover, .delete, .refuseDeleteWhileCreating:
                break
            }
        }
    }

    /// A rollover's call to APNs or the job queue, answered after a while (or failed).
    private mutating func perform(_ call: Machine.RolloverCall) {
        // Saving the successor is a store write (fenced by the store in a cluster); every other
        // call goes out to APNs or the job queue, which only the channel's owner may do.
        let callsOut = if case .switchTo = call { false } else { true }
        if callsOut, !owned { failures.append("a rollover call \(call) was decided while the gateway did not act for the channel (step \(steps))") }
        let succeeds = isCalm || random.unit() >= faults.pushFailureRate
        switch call {
        case .createSuccessor:
            if succeeds { created += 1 }
            schedule(.rolloverAnswered(run: run, succeeds ? .successorCreated("apns-\(created)") : .failed), after: delay(upTo: 500))
        case .switchTo(let successor):
            submit(.switched(to: successor, machine!.rollover))
        case .startAudience:
            if succeeds, let current = machine?.apnsChannelID { audiences.insert(current) }
            schedule(.rolloverAnswered(run: run, succeeds ? .audienceStarted : .failed), after: delay(upTo: 300))
        case .endPrevious(let previous, let push):
            schedule(.previousEndArrives(run: run, previous, push), after: delay(upTo: 200))
        case .deletePrevious:
            schedule(.rolloverAnswered(run: run, succeeds ? .previousDeleted : .failed), after: delay(upTo: 300))
        case .deleteUnneeded:
            break
        }
    }

    // MARK: The provider

    private mutating func answer(_ answers: [(request: Int, answer: TestAnswer)]) {
        for (id, answer) in answers {
            guard let request = unacknowledged[id] else { continue }
            switch answer {
            case .accepted:
                guard case .events(let seqs) = request.kind else { continue }
                unacknowledged[id] = nil
                acknowledgedSeqs = max(acknowledgedSeqs, seqs.max() ?? 0)
                if disk.state.lastSeq < acknowledgedSeqs {
                    failures.append("seq \(acknowledgedSeqs) was acknowledged but the store holds up to \(disk.state.lastSeq) (step \(steps))")
                }
                if unacknowledged.isEmpty, !endAcknowledged { sendEnd() }
            case .ended:
                unacknowledged[id] = nil
                endAcknowledged = true
                if disk.status == .active || disk.state.engine.phase == .live {
                    failures.append("the end was acknowledged but the store holds \(disk.status) (step \(steps))")
                }
            case .refused where request.kind == .end && disk.status != .active:
                // The end was stored but its answer lost: the retry hears that the channel has ended.
                unacknowledged[id] = nil
                endAcknowledged = true
            case .refused:
                failures.append("request \(id) was refused by the rules (step \(steps))")
            }
        }
    }

    private mutating func sendEnd() {
        let end = TestRequest(id: -1, kind: .end)
        unacknowledged[end.id] = end
        schedule(.providerSends(end), after: delay(upTo: 1_000))
    }

    private mutating func retry(_ request: TestRequest) {
        guard unacknowledged[request.id] != nil else { return }
        schedule(.providerSends(request), after: .milliseconds(200) + delay(upTo: 2_000))
    }

    // MARK: The store

    private mutating func submit(_ stored: Stored) {
        let succeeds = isCalm || random.unit() >= faults.storeFailureRate
        // One writer: answers come in the order of the writes.
        storeFreeAt = max(storeFreeAt, now) + delay(upTo: 100)
        schedule(.storeAnswers(run: run, stored, succeeded: succeeds), at: storeFreeAt)
    }

    private mutating func apply(_ stored: Stored) {
        switch stored {
        case .write(let write):
            disk.state = write.state
            if let status = write.endedStatus { disk.status = status }
        case .state(let state):
            disk.state = state
        case .status(let status):
            disk.status = status
        case .rollover(let rollover, _):
            disk.rollover = rollover
        case .switched(let successor, let rollover):
            disk.apnsID = successor
            disk.rollover = rollover
        case .intent:
            disk.exists = true
        case .apnsID(let apnsID):
            disk.apnsID = apnsID
            disk.status = .active
        }
    }

    /// The channel as a restart (or a new owner) loads it from the store.
    /// The provider's create: a new channel, or a repeat for the one being created (or that was).
    private mutating func create() {
        guard !createAcknowledged else { return }
        if owned, machine != nil { return perform(feed(.lifecycle(.createRequested(0)))) }
        // Down (a crash, a move): later. Never created, or its intent was not stored: a new one.
        guard owned, !disk.exists else { return schedule(.providerCreates, after: .milliseconds(500) + delay(upTo: 2_000)) }
        let (fresh, actions) = Machine.created(for: 0, rules: TestRules(), policy: Self.policy, storage: .noStorage, isShadow: false,
                                               contentState: [:], minimumRolloverInterval: Self.rolloverInterval, jitterSeed: seed, now: now)
        machine = fresh
        perform(actions)
    }

    /// The create is answered 201 (or 200): only once the channel's APNs id is stored. Then a
    /// kickoff gives it its audience.
    private mutating func createdAndAnswered() {
        guard let apnsID = machine?.apnsChannelID, disk.apnsID == apnsID else {
            return failures.append("a create was answered before its APNs channel was stored (step \(steps))")
        }
        guard !createAcknowledged else { return }
        createAcknowledged = true
        audiences.insert(apnsID)
        perform(feed(.audienceKnown))
    }

    /// After a restart, a channel whose create answer was lost is reconciled: it adopts the
    /// channel APNs made for it, or is created again.
    private mutating func reconcile() {
        guard machine?.lifecycle.awaitsReconciliation == true else { return }
        seen.reconciled += 1
        if let orphan = orphans.popLast() {
            perform(feed(.lifecycle(.adopt(orphan))))
        } else {
            perform(feed(.lifecycle(.recreate)))
        }
    }

    private mutating func restored() -> Machine {
        let lifecycle = ChannelLifecycle<Int>.restored(apnsChannelID: disk.apnsID, status: disk.status, damage: nil, jitterSeed: 1)
        let state = ChannelMachineState(engine: ChannelEngine(policy: Self.policy, storage: .noStorage, snapshot: disk.state.engine.snapshot),
                                        contentState: disk.state.contentState, lastSeq: disk.state.lastSeq)
        return Machine(rules: TestRules(), policy: Self.policy, isShadow: false, minimumRolloverInterval: Self.rolloverInterval, state: state,
                       lifecycle: lifecycle, rollover: disk.rollover, persistedStatus: disk.status, hasAudience: createAcknowledged, watchingFrom: now,
                       ownership: owned ? .acting(fence: fence) : .notActing)
    }

    // MARK: APNs

    private mutating func decided(_ push: ChannelEngine.OutgoingPush, on apnsID: String, under decidedUnder: Fence?) {
        if !owned { failures.append("a push was decided while the gateway did not act for the channel (step \(steps))") }
        if decidedUnder != fence { failures.append("a push was decided under \(String(describing: decidedUnder)), the lease's is \(fence)") }
        if !inFlight.isEmpty { failures.append("push \(push.sequence) was sent while \(inFlight.sorted()) was in flight (step \(steps))") }
        inFlight.insert(push.sequence)
        // A push that will fail without an answer may or may not reach APNs.
        if random.next() % 8 == 0, !isCalm {
            inFlight.remove(push.sequence)
            schedule(.apnsAnswers(run: run, sequence: push.sequence, .failed(.retryLater, outcome: "no_response")), after: delay(upTo: 300))
            return
        }
        schedule(.pushArrives(run: run, apnsID, push), after: delay(upTo: 200))
    }

    /// APNs took `push` on `apnsID`: devices there show it if its timestamp is newer.
    private mutating func arrived(_ push: ChannelEngine.OutgoingPush, on apnsID: String) {
        let seq = TestRules.seq(of: push)
        if let shown = shown[apnsID] {
            guard push.timestamp > shown.timestamp else { return }
            if seq < shown.seq { failures.append("devices on \(apnsID) went from seq \(shown.seq) back to \(seq) (step \(steps))") }
            if shown.isEnd, !push.isEnd { failures.append("an update replaced the end on \(apnsID) (step \(steps))") }
        }
        shown[apnsID] = (push.timestamp, seq, push.isEnd)
    }

    private mutating func pushOutcome() -> Machine.PushOutcome {
        guard !isCalm, random.unit() < faults.pushFailureRate else { return .accepted }
        return random.next() % 2 == 0 ? .failed(.throttled, outcome: "TooManyRequests") : .failed(.retryLater, outcome: "HTTP503")
    }

    // MARK: Faults

    private var isCalm: Bool { now - Self.start >= faults.calmAfter }

    private mutating func nextFaultDelay() -> Duration {
        let rate = faults.restartRate + faults.leaseLapseRate + faults.moveRate
        return .milliseconds(Int64(random.unit() * 2 / rate * 1_000))
    }

    private mutating func injectFault() {
        guard !isCalm else { return }
        schedule(.fault, after: nextFaultDelay())
        guard machine != nil, owned else { return }
        let rate = faults.restartRate + faults.leaseLapseRate + faults.moveRate
        let pick = random.unit() * rate
        if pick < faults.restartRate {
            crash()
        } else if pick < faults.restartRate + faults.leaseLapseRate {
            // The lease lapses; the channel hears of it before its next input.
            seen.lapses += 1
            owned = false
            schedule(.comesBack, after: delay(upTo: 2_000))
        } else {
            // The partition is let go; later taken up again under a higher fence.
            seen.moves += 1
            owned = false
            forget()
            schedule(.comesBack, after: delay(upTo: 5_000))
        }
    }

    /// The process is gone, whatever was on the way to it is lost; it starts again a little later.
    private mutating func crash() {
        guard machine != nil else { return }
        seen.restarts += 1
        forget()
        schedule(.comesBack, after: delay(upTo: 3_000))
    }

    private mutating func forget() {
        machine = nil
        run += 1
        inFlight = []
        timerArmings = [:]
        // The provider's connections to it are cut: it sends again what it has no answer to.
        for request in unacknowledged.values.sorted(by: { $0.id < $1.id }) { retry(request) }
        if !createAcknowledged { schedule(.providerCreates, after: .milliseconds(200) + delay(upTo: 2_000)) }
    }

    private mutating func comeBack() {
        if !owned {
            owned = true
            fence = Fence(Revision(fence.revision.value + 1))
        }
        guard machine == nil, disk.exists else { return }
        machine = restored()
        perform(feed(.resumed))
        reconcile()
    }

    /// The run is over: every event and the end acknowledged, and devices show the final state
    /// as the end.
    private mutating func checkSettled() {
        guard failures.isEmpty else { return }
        if !unacknowledged.isEmpty { failures.append("requests \(unacknowledged.keys.sorted()) were never acknowledged") }
        for apnsID in audiences.sorted() where shown[apnsID]?.isEnd != true {
            failures.append("after the end, devices on \(apnsID) show \(String(describing: shown[apnsID])), not an end")
        }
        // The latest audience: where the channel's own end went, or a previous channel whose
        // rollover's end carried the final state (the match had ended before the switch).
        guard let latest = audiences.max(by: { Int($0.dropFirst(5)) ?? 0 < Int($1.dropFirst(5)) ?? 0 }) else {
            return failures.append("the channel's create was never answered")
        }
        if shown[latest]?.seq != lastSeq {
            failures.append("after the end, devices on \(latest) show \(String(describing: shown[latest])), not seq \(lastSeq)")
        }
    }

    // MARK: Time

    private mutating func delay(upTo milliseconds: Int64) -> Duration {
        .milliseconds(1 + Int64(random.next() % UInt64(milliseconds)))
    }

    private mutating func schedule(_ event: Event, after delay: Duration) {
        schedule(event, at: now + delay)
    }

    private mutating func schedule(_ event: Event, at time: UnixTime) {
        order += 1
        scheduled[order] = event
        let key = (at: time.nanoseconds, order: order)
        // Binary search for the place that keeps `due` latest first.
        var low = 0
        var high = due.count
        while low < high {
            let middle = (low + high) / 2
            if due[middle].at > key.at || (due[middle].at == key.at && due[middle].order > key.order) { low = middle + 1 } else { high = middle }
        }
        due.insert(key, at: low)
    }

    private mutating func popNext() -> (at: UnixTime, event: Event)? {
        guard let next = due.popLast(), let event = scheduled.removeValue(forKey: next.order) else { return nil }
        return (UnixTime(nanoseconds: next.at), event)
    }
}
