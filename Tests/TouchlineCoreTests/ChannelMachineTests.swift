import Testing
import TouchlineCore

/// The rules a channel's parts only keep together (``ChannelMachine``): the commit gate holding
/// the engine while a write is in the store, ownership asked before every push and every
/// rollover call, a rollover against the channel's life at APNs, and shutdown.
@Suite("Channel machine")
struct ChannelMachineTests {
    typealias Machine = ChannelMachine<TestRules>

    static let start = UnixTime(seconds: 1_767_225_600)
    static let policy = ChannelPolicy(minimumInterval: .seconds(1), burst: 3, feedStall: .seconds(60), maximumActivityAge: .seconds(3_600))

    /// A channel whose create has settled on APNs channel `apns-1`, at `start`.
    static func active(isShadow: Bool = false) -> Machine {
        var (machine, actions) = Machine.created(for: 1, rules: TestRules(), policy: policy, storage: .noStorage, isShadow: isShadow,
                                                 contentState: [:], minimumRolloverInterval: .seconds(60), jitterSeed: 7, now: start)
        #expect(actions.count == 1)
        _ = machine.handle(.lifecycle(.intentSaved(.success(()))), now: start)
        _ = machine.handle(.lifecycle(.apnsCreated("apns-1")), now: start)
        _ = machine.handle(.lifecycle(.idSaved(.success(()))), now: start)
        #expect(machine.status == .active && machine.apnsChannelID == "apns-1")
        return machine
    }

    static func events(_ id: Int, _ seqs: Int64...) -> Machine.Input {
        .request(TestRequest(id: id, kind: .events(seqs)), room: (), storeWritable: true)
    }

    /// An operator's rollover, begun: the save to perform.
    static func begin(_ machine: inout Machine, at now: UnixTime = start) -> Machine.RolloverSave? {
        let actions = machine.handle(.rolloverRequested(storeWritable: true), now: now)
        guard case .beginRollover(let save)? = actions.first, actions.count == 1 else { return nil }
        return save
    }

    static func committed(_ succeeded: Bool = true) -> Machine.Input {
        .writeCompleted(succeeded: succeeded, room: (), storeWritable: true)
    }

    // MARK: The gate

    @Test func aWritesPushGoesOnlyOnceItCommits() {
        var machine = Self.active()
        let submitted = machine.handle(Self.events(1, 1), now: Self.start)
        #expect(submitted.compactMap(\.submitted).count == 1)
        #expect(submitted.compactMap(\.push).isEmpty, "a push left before its write was on disk")
        #expect(machine.lastSeq == 0, "the state changed before the commit")
        let done = machine.handle(Self.committed(), now: Self.start)
        #expect(done.compactMap(\.committed).count == 1)
        #expect(done.compactMap(\.push).map(TestRules.seq) == [1])
        #expect(machine.lastSeq == 1)
    }

    @Test func whileAWriteIsOutThePushAnswerAndTheTimerAreHeldThenFedInOrder() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        let first = machine.handle(Self.committed(), now: Self.start).compactMap(\.push)
        #expect(first.count == 1)
        _ = machine.handle(Self.events(2, 2), now: Self.start)
        #expect(machine.isWriting)
        // The answer to seq 1 and a timer come while write 2 is in the store: the engine does not see them.
        #expect(machine.handle(.pushAnswered(sequence: first[0].sequence, .accepted), now: Self.start).isEmpty)
        #expect(machine.handle(.timerFired(.engine), now: Self.start).isEmpty)
        #expect(machine.engine.hasPushInFlight, "the engine took an answer while a write was out")
        let done = machine.handle(Self.committed(), now: Self.start + .seconds(1))
        // Applied first, then the held answer, then the push it released.
        let committedAt = done.firstIndex { $0.committed != nil }
        let answerAt = done.firstIndex { if case .pushAnswerTaken = $0 { true } else { false } }
        let pushAt = done.firstIndex { $0.push != nil }
        #expect(committedAt != nil && answerAt != nil && pushAt != nil)
        #expect(committedAt! < answerAt! && answerAt! < pushAt!)
        #expect(done.compactMap(\.push).map(TestRules.seq) == [2])
    }

    @Test func aFailedWriteChangesNothingButTheHeldAnswerStillReachesTheEngine() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        let first = machine.handle(Self.committed(), now: Self.start).compactMap(\.push)
        _ = machine.handle(Self.events(2, 2, 3), now: Self.start)
        _ = machine.handle(.pushAnswered(sequence: first[0].sequence, .accepted), now: Self.start)
        let done = machine.handle(Self.committed(false), now: Self.start + .seconds(1))
        #expect(done.compactMap(\.failedWrite).count == 1)
        #expect(done.compactMap(\.push).isEmpty, "a push of a write that failed went out")
        #expect(machine.lastSeq == 1 && machine.contentState == ["seq": 1])
        #expect(!machine.engine.hasPushInFlight, "the held answer was lost")
        // The retry of the same request is stored like a first attempt.
        #expect(machine.handle(Self.events(3, 2, 3), now: Self.start + .seconds(2)).compactMap(\.submitted).count == 1)
    }

    @Test func requestsThatCameMeanwhileGoTogetherInTheNextWriteAgainstWhatTheLastLeft() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1, 2), now: Self.start)
        #expect(machine.handle(Self.events(2, 2, 3), now: Self.start).isEmpty)
        #expect(machine.handle(Self.events(3, 4), now: Self.start).isEmpty)
        let done = machine.handle(Self.committed(), now: Self.start)
        let next = done.compactMap(\.submitted)
        #expect(next.count == 1)
        // seq 2 is a duplicate after the first write: only 3 and 4 are new.
        #expect(next.first?.acceptedSeqs == [3, 4])
        #expect(next.first?.answers.map(\.request) == [2, 3])
    }

    @Test func requestsWaitingWhileTheStoreFailsAreRefusedAtTheCompletion() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        _ = machine.handle(Self.events(2, 2), now: Self.start)
        let done = machine.handle(.writeCompleted(succeeded: false, room: (), storeWritable: false), now: Self.start)
        #expect(done.compactMap(\.refusal) == [.storeFailing])
        #expect(!machine.isWriting)
    }

    @Test func requestsAreRefusedBeforeTheChannelIsReadyWhenTheStoreFailsAndPastSixtyFourWaiting() {
        var (creating, _) = Machine.created(for: 1, rules: TestRules(), policy: Self.policy, storage: .noStorage, isShadow: false,
                                            contentState: [:], minimumRolloverInterval: .seconds(60), jitterSeed: 7, now: Self.start)
        #expect(creating.handle(Self.events(1, 1), now: Self.start).compactMap(\.refusal) == [.notReady])
        var machine = Self.active()
        let failing = machine.handle(.request(TestRequest(id: 1, kind: .events([1])), room: (), storeWritable: false), now: Self.start)
        #expect(failing.compactMap(\.refusal) == [.storeFailing])
        _ = machine.handle(Self.events(2, 1), now: Self.start)
        for id in 0..<CommitGate<TestRequest, Machine.HeldInput>.maximumWaiting {
            #expect(machine.handle(Self.events(10 + id, 2), now: Self.start).isEmpty)
        }
        #expect(machine.handle(Self.events(99, 2), now: Self.start).compactMap(\.refusal) == [.busy])
    }

    // MARK: Ownership

    @Test func noPushIsDecidedWhileTheGatewayDoesNotActForTheChannel() {
        var machine = Self.active()
        _ = machine.handle(.ownershipChanged(.notActing), now: Self.start)
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        let done = machine.handle(Self.committed(), now: Self.start)
        #expect(done.compactMap(\.push).isEmpty, "a push was decided without ownership")
        // The push went back to the engine as one to retry after a back-off.
        #expect(!machine.engine.hasPushInFlight && machine.engine.pendingState != nil)
        let retryAt = done.compactMap(\.armedTimer).last { $0.0 == .engine }?.1
        #expect(retryAt.map { $0 > Self.start } ?? false)
        let fence = Fence(Revision(42))
        _ = machine.handle(.ownershipChanged(.acting(fence: fence)), now: retryAt!)
        let retried = machine.handle(.timerFired(.engine), now: retryAt!)
        let sent = retried.compactMap { action -> Fence?? in if case .send(_, _, let fence) = action { fence } else { nil } }
        #expect(sent == [fence], "the push goes with the fence it was decided under")
    }

    @Test func aRolloverStepThatCallsOutWaitsForOwnershipAndIsRetried() {
        var machine = Self.active()
        _ = machine.handle(.audienceKnown, now: Self.start)
        _ = machine.handle(.ownershipChanged(.notActing), now: Self.start)
        guard let save = Self.begin(&machine) else { return #expect(Bool(false)) }
        let saved = machine.handle(.rolloverSaved(save, succeeded: true), now: Self.start)
        #expect(saved.contains { if case .rolloverWaitsForOwnership = $0 { true } else { false } })
        #expect(saved.compactMap(\.rolloverCall).isEmpty, "a rollover called APNs without ownership")
        let retryAt = saved.compactMap(\.armedTimer).first { $0.0 == .rollover }?.1
        #expect(retryAt == Self.start + .seconds(1))
        _ = machine.handle(.ownershipChanged(.acting(fence: nil)), now: retryAt!)
        let retried = machine.handle(.timerFired(.rollover), now: retryAt!)
        // The retry saves the stage first, then creates the successor.
        #expect(retried.compactMap(\.rolloverSave).first?.rest == [.createSuccessor])
    }

    // MARK: Rollover against the lifecycle

    @Test func aRolloverMovesPushesAndKickoffsToTheSuccessorAndEndsThePreviousWithTheCurrentState() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 5), now: Self.start)
        let first = machine.handle(Self.committed(), now: Self.start).compactMap(\.push)
        _ = machine.handle(.pushAnswered(sequence: first[0].sequence, .accepted), now: Self.start)
        _ = machine.handle(.audienceKnown, now: Self.start)
        guard let save = Self.begin(&machine) else { return #expect(Bool(false)) }
        #expect(machine.handle(.rolloverSaved(save, succeeded: true), now: Self.start).compactMap(\.rolloverCall) == [.createSuccessor])
        let switching = machine.handle(.rolloverStep(.successorCreated("apns-2")), now: Self.start)
        #expect(switching.compactMap(\.rolloverCall) == [.switchTo(successor: "apns-2")])
        #expect(machine.apnsChannelID == "apns-1", "the successor is the channel's only once saved")
        let switched = machine.handle(.rolloverStep(.switched(to: "apns-2")), now: Self.start)
        #expect(machine.apnsChannelID == "apns-2")
        #expect(switched.contains { if case .lifecycle(.openKickoffs("apns-2")) = $0 { true } else { false } })
        let audience = switched.compactMap(\.rolloverSave).first
        #expect(audience?.rest == [.startAudience(generation: 2)])
        let ending = machine.handle(.rolloverSaved(audience!, succeeded: true), now: Self.start)
        #expect(ending.compactMap(\.rolloverCall) == [.startAudience(generation: 2)])
        let ended = machine.handle(.rolloverStep(.audienceStarted), now: Self.start)
        let endSave = ended.compactMap(\.rolloverSave).first!
        let endCall = machine.handle(.rolloverSaved(endSave, succeeded: true), now: Self.start).compactMap(\.rolloverCall).first
        guard case .endPrevious("apns-1", let push)? = endCall else { return #expect(Bool(false), "\(String(describing: endCall))") }
        #expect(TestRules.seq(of: push) == 5)
        // The channel's own pushes go to the successor meanwhile.
        _ = machine.handle(Self.events(2, 6), now: Self.start + .seconds(5))
        let sent = machine.handle(Self.committed(), now: Self.start + .seconds(5))
        #expect(sent.compactMap { if case .send(_, let apnsID, _) = $0 { apnsID } else { nil } } == ["apns-2"])
    }

    @Test func aSuccessorCreatedAfterTheMatchEndedIsDeletedAgainAndNoRolloverRunsBeforeTheChannelIsActive() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        _ = machine.handle(Self.committed(), now: Self.start)
        _ = machine.handle(.audienceKnown, now: Self.start)
        guard let save = Self.begin(&machine) else { return #expect(Bool(false)) }
        _ = machine.handle(.rolloverSaved(save, succeeded: true), now: Self.start)
        _ = machine.handle(.request(TestRequest(id: 2, kind: .end), room: (), storeWritable: true), now: Self.start)
        _ = machine.handle(Self.committed(), now: Self.start)
        let late = machine.handle(.rolloverStep(.successorCreated("apns-2")), now: Self.start)
        #expect(late.compactMap(\.rolloverSave).first?.rest == [.deleteUnneeded("apns-2")])
        #expect(machine.apnsChannelID == "apns-1")

        // A channel still being created has no rollover, however old.
        var (creating, _) = Machine.created(for: 1, rules: TestRules(), policy: Self.policy, storage: .noStorage, isShadow: false,
                                            contentState: [:], minimumRolloverInterval: .seconds(60), jitterSeed: 7, now: Self.start)
        #expect(creating.handle(.audienceKnown, now: Self.start + .seconds(7_200)).isEmpty)
    }

    @Test func anOperatorsRolloverNeedsALiveMatchWithAnAudienceAndAWritableStore() {
        var (creating, _) = Machine.created(for: 1, rules: TestRules(), policy: Self.policy, storage: .noStorage, isShadow: false,
                                            contentState: [:], minimumRolloverInterval: .seconds(60), jitterSeed: 7, now: Self.start)
        func refusal(_ machine: inout Machine, storeWritable: Bool = true) -> Machine.RolloverRefusal? {
            if case .refuseRollover(let refusal)? = machine.handle(.rolloverRequested(storeWritable: storeWritable), now: Self.start).first { refusal } else { nil }
        }
        #expect(refusal(&creating) == .noLiveMatch)
        var shadow = Self.active(isShadow: true)
        #expect(refusal(&shadow) == .shadowChannel)
        var machine = Self.active()
        #expect(refusal(&machine) == .noAudience)
        _ = machine.handle(.audienceKnown, now: Self.start)
        #expect(refusal(&machine, storeWritable: false) == .storeFailing)
        let save = Self.begin(&machine)
        #expect(save?.rest == [.createSuccessor])
        #expect(refusal(&machine) == .underWay)
        _ = machine.handle(.rolloverStep(.failed), now: Self.start)
        #expect(machine.rollover.stage == .creatingSuccessor, "a failed step is retried, the rollover stays under way")
    }

    @Test func anOperatorsRolloverWhoseSaveFailsDidNotBegin() {
        var machine = Self.active()
        _ = machine.handle(.audienceKnown, now: Self.start)
        guard let save = Self.begin(&machine) else { return #expect(Bool(false)) }
        #expect(machine.handle(.rolloverSaved(save, succeeded: false), now: Self.start).isEmpty)
        #expect(machine.rollover.stage == .live && machine.rollover.lastStartedAt == nil)
        #expect(Self.begin(&machine) != nil, "a failed start counted against the interval")
    }

    // MARK: The life at APNs, restarts and shadow channels

    /// The end is pushed, accepted, and after the grace period the APNs channel is deleted; a
    /// refused deletion is a deadline of its own, retried until confirmed, and saved as deleted.
    @Test func theEndLeadsToADeletionRetriedOnItsOwnTimerUntilConfirmed() {
        let (closed, graceOver) = Self.ended()
        var machine = closed
        let refused = machine.handle(.lifecycle(.deletionFailed(retryable: true)), now: graceOver)
        let retryAt = refused.compactMap(\.armedTimer).first { $0.0 == .deletionRetry }?.1
        #expect(retryAt.map { $0 > graceOver } ?? false)
        let again = machine.handle(.timerFired(.deletionRetry), now: retryAt!)
        #expect(again.compactMap(\.lifecycleAction).contains { if case .deleteAtAPNs = $0 { true } else { false } })
        let confirmed = machine.handle(.lifecycle(.deletionConfirmed), now: retryAt!)
        #expect(confirmed.contains { if case .saveStatus(.deleted) = $0 { true } else { false } })
        #expect(machine.status == .deleted)
    }

    /// A channel loaded from the store sends what was pending (a push in flight at the crash
    /// counts as pending) and asks again for a deletion that was due.
    @Test func aResumedChannelSendsWhatWasPendingAndAsksAgainForADueDeletion() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 3), now: Self.start)
        #expect(machine.handle(Self.committed(), now: Self.start).compactMap(\.push).count == 1)
        var restored = Self.restored(from: machine, at: Self.start + .seconds(30))
        let resumed = restored.handle(.resumed, now: Self.start + .seconds(30))
        #expect(resumed.compactMap(\.push).map(TestRules.seq) == [3], "the push in flight at the crash was not sent again")
        #expect(resumed.compactMap(\.armedTimer).contains { $0.0 == .feed }, "the feed watch did not start again")

        let (closing, graceOver) = Self.ended()
        #expect(closing.engine.phase == .closed)
        var reopened = Self.restored(from: closing, at: graceOver + .seconds(30))
        let asked = reopened.handle(.resumed, now: graceOver + .seconds(30))
        #expect(asked.compactMap(\.lifecycleAction).contains { if case .deleteAtAPNs("apns-1") = $0 { true } else { false } })
    }

    /// A shadow channel's pushes never go to APNs: the gateway accepts them in its place.
    @Test func aShadowChannelsPushesAreAcceptedByTheGateway() {
        var machine = Self.active(isShadow: true)
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        let done = machine.handle(Self.committed(), now: Self.start)
        #expect(done.compactMap(\.push).isEmpty)
        let shadowed = done.compactMap { if case .sendInShadow(let push) = $0 { push } else { nil } }
        #expect(shadowed.count == 1)
        let taken = machine.handle(.pushAnswered(sequence: shadowed[0].sequence, .acceptedInShadow), now: Self.start)
        #expect(taken.contains { if case .pushAnswerTaken(_, .acceptedInShadow) = $0 { true } else { false } })
        #expect(!machine.engine.hasPushInFlight && machine.engine.lastSentState != nil)
    }

    /// A channel that had one event, ended, and whose grace period is over: its deletion is
    /// asked for (`deleteAtAPNs` was performed) at the time returned.
    static func ended() -> (Machine, UnixTime) {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        let first = machine.handle(Self.committed(), now: Self.start).compactMap(\.push)
        _ = machine.handle(.pushAnswered(sequence: first[0].sequence, .accepted), now: Self.start)
        _ = machine.handle(.request(TestRequest(id: 2, kind: .end), room: (), storeWritable: true), now: Self.start + .seconds(5))
        let end = machine.handle(Self.committed(), now: Self.start + .seconds(5)).compactMap(\.push)
        #expect(end.map(\.isEnd) == [true] && end.map(TestRules.seq) == [1])
        let ended = machine.handle(.pushAnswered(sequence: end[0].sequence, .accepted), now: Self.start + .seconds(5))
        let graceOver = ended.compactMap(\.armedTimer).last { $0.0 == .engine }!.1
        let due = machine.handle(.timerFired(.engine), now: graceOver)
        #expect(due.compactMap(\.lifecycleAction).contains { if case .deleteAtAPNs("apns-1") = $0 { true } else { false } })
        return (machine, graceOver)
    }

    /// A provider's delete waits for a create under way, and takes every APNs channel the
    /// channel holds with it: its own (none for a shadow channel or once APNs deleted it) and
    /// a rollover's other one.
    @Test func aDeleteWaitsForTheCreateAndTakesEveryAPNsChannelWithIt() {
        var (creating, _) = Machine.created(for: 1, rules: TestRules(), policy: Self.policy, storage: .noStorage, isShadow: false,
                                            contentState: [:], minimumRolloverInterval: .seconds(60), jitterSeed: 7, now: Self.start)
        #expect(creating.handle(.deleteRequested, now: Self.start).count == 1)
        #expect(creating.handle(.deleteRequested, now: Self.start).contains { if case .refuseDeleteWhileCreating = $0 { true } else { false } })
        /// The APNs channels the delete takes, and whether it reports the deletion.
        func deletion(_ machine: inout Machine) -> (apnsChannel: String?, rolloverChannel: String?, reports: Bool)? {
            guard case .delete(let deletion)? = machine.handle(.deleteRequested, now: Self.start).first else { return nil }
            return (deletion.apnsChannel, deletion.rolloverChannel, deletion.reportsDeletion)
        }
        var machine = Self.active()
        #expect(deletion(&machine).map { $0 == ("apns-1", nil, true) } == true)
        _ = machine.handle(.audienceKnown, now: Self.start)
        _ = machine.handle(.rolloverSaved(Self.begin(&machine)!, succeeded: true), now: Self.start)
        _ = machine.handle(.rolloverStep(.successorCreated("apns-2")), now: Self.start)
        #expect(deletion(&machine).map { $0 == ("apns-1", "apns-2", true) } == true)
        var shadow = Self.active(isShadow: true)
        #expect(deletion(&shadow).map { $0.apnsChannel == nil } == true)
        var (deleted, graceOver) = Self.ended()
        _ = deleted.handle(.lifecycle(.deletionConfirmed), now: graceOver)
        #expect(deletion(&deleted).map { $0 == (nil, nil, false) } == true)
    }

    /// `machine` as a restart would load it from what it saved.
    static func restored(from machine: Machine, at now: UnixTime) -> Machine {
        let state = ChannelMachineState(engine: ChannelEngine(policy: policy, storage: .noStorage, snapshot: machine.engine.snapshot),
                                        contentState: machine.contentState, lastSeq: machine.lastSeq)
        let lifecycle = ChannelLifecycle<Int>.restored(apnsChannelID: machine.apnsChannelID, status: machine.status, damage: nil, jitterSeed: 7)
        return Machine(rules: TestRules(), policy: policy, isShadow: false, minimumRolloverInterval: .seconds(60), state: state,
                       lifecycle: lifecycle, rollover: machine.rollover, persistedStatus: machine.status, hasAudience: false, watchingFrom: now,
                       ownership: .acting(fence: nil))
    }

    // MARK: Shutdown

    @Test func afterStopNothingGoesOutAndNoTimerIsArmed() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        let stopped = machine.handle(.stopped, now: Self.start)
        #expect(stopped.allSatisfy { if case .cancel = $0 { true } else { false } })
        let done = machine.handle(Self.committed(), now: Self.start)
        #expect(done.compactMap(\.committed).count == 1, "the acknowledged write is still answered")
        #expect(done.compactMap(\.push).isEmpty && done.compactMap(\.armedTimer).isEmpty)
        #expect(machine.engine.snapshot.pending != nil, "what was pending stays in the snapshot")
    }

    // MARK: Feed watch

    @Test func theFeedWatchTakesAWritesEventsOnlyWithItsCommit() {
        var machine = Self.active()
        _ = machine.handle(Self.events(1, 1), now: Self.start)
        _ = machine.handle(Self.committed(), now: Self.start)
        let submitted = machine.handle(Self.events(2, 5), now: Self.start + .seconds(10))
        guard case .submit(_, let reports)? = submitted.first else { return #expect(Bool(false)) }
        #expect(reports == [.gap(from: 1, to: 5)])
        _ = machine.handle(Self.committed(false), now: Self.start + .seconds(10))
        #expect(machine.feed.gaps == 0 && machine.feed.lastEventAt == Self.start, "a failed write's events reached the watch")
        let stall = machine.handle(.timerFired(.feed), now: Self.start + .seconds(60))
        #expect(stall.contains { if case .reportStall = $0 { true } else { false } })
    }
}
