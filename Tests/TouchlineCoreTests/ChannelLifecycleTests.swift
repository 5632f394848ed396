import Testing
import TouchlineCore

/// The channel's life at APNs in virtual time: every transition, and for each pair of steps a
/// crash between them (the store keeps what committed; the restored lifecycle says what is
/// done again).
@Suite("Channel lifecycle")
struct ChannelLifecycleTests {
    typealias Lifecycle = ChannelLifecycle<Int>

    /// The actions without their waiters, comparable in the tests.
    enum Step: Equatable {
        case saveIntent, createAtAPNs, saveAPNsID(String), openKickoffs(String), answerCreated([Int]), answerExisting(Int)
        case answerRefused([Int], Lifecycle.Refusal), forget, reportChannelLimit, deleteAtAPNs(String), armDeletionRetry
        case abandonDeletion(String), saveStatus
    }

    static func steps(_ actions: [Lifecycle.Action]) -> [Step] {
        actions.map { action in
            switch action {
            case .saveIntent: .saveIntent
            case .createAtAPNs: .createAtAPNs
            case .saveAPNsID(let id): .saveAPNsID(id)
            case .openKickoffs(let id): .openKickoffs(id)
            case .answerCreated(let waiters): .answerCreated(waiters)
            case .answerExisting(let waiter): .answerExisting(waiter)
            case .answerRefused(let waiters, let refusal): .answerRefused(waiters, refusal)
            case .forget: .forget
            case .reportChannelLimit: .reportChannelLimit
            case .deleteAtAPNs(let id): .deleteAtAPNs(id)
            case .armDeletionRetry: .armDeletionRetry
            case .abandonDeletion(let id): .abandonDeletion(id)
            case .saveStatus: .saveStatus
            }
        }
    }

    static let diskFull = Lifecycle.StoreFailure("disk I/O error", isStorageFailure: true)

    /// A lifecycle that has just saved its intent and asked APNs.
    static func creatingAtAPNs(waiter: Int = 1) -> Lifecycle {
        var (lifecycle, _) = Lifecycle.created(for: waiter, jitterSeed: 7)
        _ = lifecycle.handle(.intentSaved(.success(())))
        return lifecycle
    }

    static func active(_ id: String = "apns-1") -> Lifecycle {
        var lifecycle = creatingAtAPNs()
        _ = lifecycle.handle(.apnsCreated(id))
        _ = lifecycle.handle(.idSaved(.success(())))
        return lifecycle
    }

    // MARK: Creating

    @Test func theIntentIsSavedBeforeAPNsIsAskedAndTheIdBeforeTheChannelIsActive() {
        var (lifecycle, actions) = Lifecycle.created(for: 1, jitterSeed: 7)
        #expect(Self.steps(actions) == [.saveIntent])
        #expect(lifecycle.stage == .intent && lifecycle.status(enginePhase: .live) == .creating)
        #expect(Self.steps(lifecycle.handle(.intentSaved(.success(())))) == [.createAtAPNs])
        #expect(lifecycle.stage == .creatingAtAPNs)
        #expect(Self.steps(lifecycle.handle(.apnsCreated("apns-1"))) == [.saveAPNsID("apns-1")])
        #expect(lifecycle.stage == .savingID("apns-1") && lifecycle.apnsChannelID == nil && lifecycle.unsavedAPNsChannelID == "apns-1")
        #expect(lifecycle.isCreateUnderWay)
        #expect(Self.steps(lifecycle.handle(.idSaved(.success(())))) == [.openKickoffs("apns-1"), .answerCreated([1])])
        #expect(lifecycle.stage == .active("apns-1") && lifecycle.apnsChannelID == "apns-1" && lifecycle.isLive)
        #expect(lifecycle.status(enginePhase: .live) == .active && !lifecycle.isCreateUnderWay)
    }

    @Test func anIntentTheStoreRefusedForgetsTheChannelAndAnswersItsWaiters() {
        var (lifecycle, _) = Lifecycle.created(for: 1, jitterSeed: 7)
        _ = lifecycle.handle(.createRequested(2))
        #expect(Self.steps(lifecycle.handle(.intentSaved(.failure(Self.diskFull)))) == [.forget, .answerRefused([1, 2], .intentNotSaved(Self.diskFull))])
        #expect(lifecycle.waiters.isEmpty)
    }

    @Test func repeatsJoinTheCreateUnderWayAndAllGetTheAnswer() {
        var (lifecycle, _) = Lifecycle.created(for: 1, jitterSeed: 7)
        #expect(Self.steps(lifecycle.handle(.createRequested(2))).isEmpty)
        _ = lifecycle.handle(.intentSaved(.success(())))
        #expect(Self.steps(lifecycle.handle(.createRequested(3))).isEmpty, "no second APNs create")
        _ = lifecycle.handle(.apnsCreated("apns-1"))
        #expect(Self.steps(lifecycle.handle(.createRequested(4))).isEmpty, "no second save")
        #expect(Self.steps(lifecycle.handle(.idSaved(.success(())))) == [.openKickoffs("apns-1"), .answerCreated([1, 2, 3, 4])])
        #expect(Self.steps(lifecycle.handle(.createRequested(5))) == [.answerExisting(5)])
    }

    @Test func aCreateAPNsRefusedIsPendingAndTheNextRequestAsksAgain() {
        var lifecycle = Self.creatingAtAPNs()
        let refused = lifecycle.handle(.apnsCreateFailed("HTTP 500", limitReached: false))
        #expect(Self.steps(refused) == [.answerRefused([1], .apnsRefused("HTTP 500", limitReached: false))])
        #expect(lifecycle.stage == .pending && !lifecycle.isCreateUnderWay && lifecycle.status(enginePhase: .live) == .creating)
        #expect(Self.steps(lifecycle.handle(.createRequested(2))) == [.createAtAPNs])
    }

    @Test func theChannelLimitIsReportedToWebhooks() {
        var lifecycle = Self.creatingAtAPNs()
        #expect(Self.steps(lifecycle.handle(.apnsCreateFailed("CannotCreateChannelConfig", limitReached: true)))
            == [.reportChannelLimit, .answerRefused([1], .apnsRefused("CannotCreateChannelConfig", limitReached: true))])
    }

    @Test func anIdWhoseSaveFailedIsSavedAgainNeverCreatedTwice() {
        var lifecycle = Self.creatingAtAPNs()
        _ = lifecycle.handle(.apnsCreated("apns-1"))
        #expect(Self.steps(lifecycle.handle(.idSaved(.failure(Self.diskFull)))) == [.answerRefused([1], .idNotSaved(Self.diskFull))])
        #expect(lifecycle.stage == .unsavedID("apns-1"))
        // A provider's delete now must delete the APNs channel too, so it does not leak.
        #expect(lifecycle.apnsChannelToDelete == "apns-1" && !lifecycle.isCreateUnderWay)
        #expect(Self.steps(lifecycle.handle(.createRequested(2))) == [.saveAPNsID("apns-1")])
        #expect(Self.steps(lifecycle.handle(.idSaved(.success(())))) == [.openKickoffs("apns-1"), .answerCreated([2])])
    }

    @Test func answersThatNoLongerFitChangeNothing() {
        var lifecycle = Self.active()
        for input: Lifecycle.Input in [.apnsCreated("apns-2"), .intentSaved(.success(())), .idSaved(.success(())), .adopt("apns-3"),
                                       .recreate, .deletionConfirmed, .deletionRetryDue, .deletionFailed(retryable: true)] {
            #expect(Self.steps(lifecycle.handle(input)).isEmpty, "\(input)")
        }
        #expect(lifecycle.stage == .active("apns-1"))
    }

    // MARK: Deleting

    @Test func deletionIsRetriedWithGrowingBackOffUntilAPNsConfirms() {
        var lifecycle = Self.active()
        #expect(Self.steps(lifecycle.handle(.deletionDue)) == [.deleteAtAPNs("apns-1")])
        #expect(lifecycle.isLive && lifecycle.status(enginePhase: .closed) == .ended)
        var delays: [Duration] = []
        for _ in 0..<10 {
            guard case .armDeletionRetry(let delay)? = lifecycle.handle(.deletionFailed(retryable: true)).first else {
                Issue.record("no retry armed")
                return
            }
            delays.append(delay)
            #expect(Self.steps(lifecycle.handle(.deletionRetryDue)) == [.deleteAtAPNs("apns-1")])
        }
        // 1 s doubling to 5 min, jitter at most half.
        #expect(delays[0] >= .milliseconds(500) && delays[0] <= .seconds(1))
        #expect(delays[3] >= .seconds(4) && delays[3] <= .seconds(8))
        #expect(delays[9] >= .seconds(150) && delays[9] <= .seconds(300))
        #expect(lifecycle.stage == .deleting("apns-1", attempts: 10))
        #expect(Self.steps(lifecycle.handle(.deletionConfirmed)) == [.saveStatus])
        #expect(lifecycle.stage == .deleted("apns-1") && lifecycle.status(enginePhase: .closed) == .deleted)
        #expect(lifecycle.apnsChannelToDelete == nil && !lifecycle.isLive)
    }

    @Test func theSameSeedGivesTheSameDelays() {
        func delays() -> [Duration] {
            var lifecycle = Self.active()
            _ = lifecycle.handle(.deletionDue)
            return (0..<5).compactMap { _ in
                if case .armDeletionRetry(let delay)? = lifecycle.handle(.deletionFailed(retryable: true)).first { delay } else { nil }
            }
        }
        #expect(delays() == delays() && delays().count == 5)
    }

    @Test func aDeletionThatCanNeverSucceedIsLeftToAnOperator() {
        var lifecycle = Self.active()
        _ = lifecycle.handle(.deletionDue)
        #expect(Self.steps(lifecycle.handle(.deletionFailed(retryable: false))) == [.abandonDeletion("apns-1")])
        #expect(lifecycle.stage == .deleting("apns-1", attempts: 0))
    }

    @Test func aDeletedOrDamagedChannelAnswersARepeatCreateWithItself() {
        var deleted = Lifecycle.restored(apnsChannelID: "apns-1", status: .deleted, damage: nil, jitterSeed: 1)
        #expect(Self.steps(deleted.handle(.createRequested(1))) == [.answerExisting(1)])
        var damaged = Lifecycle.restored(apnsChannelID: nil, status: .active, damage: "bad snapshot", jitterSeed: 1)
        #expect(Self.steps(damaged.handle(.createRequested(1))) == [.answerExisting(1)])
        #expect(damaged.status(enginePhase: .live) == .broken && !damaged.isLive)
    }

    // MARK: Crashes between steps

    /// What the store holds of one channel, as the actions' writes leave it.
    struct Record {
        var exists = false
        var status = ChannelStatus.creating
        var apnsChannelID: String?
        var engineClosed = false

        func restored() -> Lifecycle? {
            exists ? Lifecycle.restored(apnsChannelID: apnsChannelID, status: status, damage: nil, jitterSeed: 7) : nil
        }
    }

    /// What a restart does first for the restored lifecycle: reconciliation for a pending one
    /// (adopting the orphan APNs may hold, or creating again), the deletion again for one the
    /// engine had closed; nothing otherwise.
    static func restart(_ record: Record, orphan: String?) -> (Lifecycle?, [Step]) {
        guard var lifecycle = record.restored() else { return (nil, []) }
        if lifecycle.awaitsReconciliation {
            let plan = ChannelReconciliation.plan(pending: [.init(id: "m1", storage: .mostRecent, createdAt: UnixTime(seconds: 1))],
                                                  orphans: orphan.map { [.init(apnsID: $0, storage: .mostRecent)] } ?? [])
            let input: Lifecycle.Input = plan.adoptions.first.map { .adopt($0.apnsID) } ?? .recreate
            return (lifecycle, steps(lifecycle.handle(input)))
        }
        if lifecycle.isLive, record.engineClosed { return (lifecycle, steps(lifecycle.handle(.deletionDue))) }
        return (lifecycle, [])
    }

    @Test func aCrashBetweenAnyTwoStepsRedoesOnlyWhatDidNotCommitAndNeverMakesASecondAPNsChannel() {
        // The steps of a channel's whole life, each with what it commits to the store.
        var record = Record()
        var lifecycle: Lifecycle
        var expectations: [(after: String, record: Record, orphan: String?, redo: [Step])] = []

        (lifecycle, _) = Lifecycle.created(for: 1, jitterSeed: 7)
        // Crash before the intent committed: nothing is stored and nothing is done (no 201 was given).
        expectations.append(("create requested", record, nil, []))
        _ = lifecycle.handle(.intentSaved(.success(())))
        record.exists = true
        // Crash with the intent stored, before APNs answered (APNs may not have created it): created again.
        expectations.append(("intent saved", record, nil, [.createAtAPNs]))
        _ = lifecycle.handle(.apnsCreated("apns-1"))
        // Crash after APNs created it, before its id was saved: the orphan is adopted, not created twice.
        expectations.append(("APNs created", record, "apns-1", [.saveAPNsID("apns-1")]))
        _ = lifecycle.handle(.idSaved(.success(())))
        record.status = .active
        record.apnsChannelID = "apns-1"
        expectations.append(("id saved", record, nil, []))
        _ = lifecycle.handle(.deletionDue)
        record.engineClosed = true
        record.status = .ended
        // Crash while APNs is asked to delete it: asked again.
        expectations.append(("deletion due", record, nil, [.deleteAtAPNs("apns-1")]))
        _ = lifecycle.handle(.deletionConfirmed)
        // Crash after APNs confirmed, before `deleted` was saved: asked again (APNs then says it is gone).
        expectations.append(("deletion confirmed", record, nil, [.deleteAtAPNs("apns-1")]))
        record.status = .deleted
        expectations.append(("deleted saved", record, nil, []))

        for expectation in expectations {
            let (restored, redo) = Self.restart(expectation.record, orphan: expectation.orphan)
            #expect(redo == expectation.redo, "after \(expectation.after)")
            #expect(!redo.contains(.createAtAPNs) || expectation.orphan == nil, "a second APNs channel after \(expectation.after)")
            if expectation.after == "deleted saved" { #expect(restored?.stage == .deleted("apns-1")) }
        }
        #expect(lifecycle.stage == .deleted("apns-1"))
    }

    @Test func anAdoptionWhoseSaveFailsKeepsTheIdForTheNextCreate() {
        var lifecycle = Lifecycle.restored(apnsChannelID: nil, status: .creating, damage: nil, jitterSeed: 7)
        #expect(lifecycle.awaitsReconciliation)
        #expect(Self.steps(lifecycle.handle(.adopt("apns-9"))) == [.saveAPNsID("apns-9")])
        #expect(lifecycle.isCreateUnderWay)
        #expect(Self.steps(lifecycle.handle(.idSaved(.failure(Self.diskFull)))).isEmpty, "no waiter to answer")
        #expect(Self.steps(lifecycle.handle(.createRequested(1))) == [.saveAPNsID("apns-9")])
        #expect(Self.steps(lifecycle.handle(.idSaved(.success(())))) == [.openKickoffs("apns-9"), .answerCreated([1])])
    }

    /// A rollover makes its successor the channel's APNs channel: kickoffs open on it, and a
    /// deletion deletes it; a channel already being deleted takes no successor.
    @Test func aRolloverMakesTheSuccessorTheChannelsOwn() {
        var lifecycle = Lifecycle.restored(apnsChannelID: "apns-1", status: .active, damage: nil, jitterSeed: 1)
        #expect(Self.steps(lifecycle.handle(.rolledOver(to: "apns-2"))) == [.openKickoffs("apns-2")])
        #expect(lifecycle.apnsChannelID == "apns-2")
        #expect(Self.steps(lifecycle.handle(.deletionDue)) == [.deleteAtAPNs("apns-2")])
        #expect(Self.steps(lifecycle.handle(.rolledOver(to: "apns-3"))).isEmpty && lifecycle.apnsChannelID == "apns-2")
    }
}
