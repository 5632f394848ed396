/// A channel's life at APNs, outside the engine: the create intent, the APNs create, the save
/// of the id APNs gave, adoption by reconciliation, and the deletion once the engine has closed
/// the channel. Pure: inputs with their time, actions out; the shell performs the actions (store
/// writes, APNs calls, answers) and feeds back what happened.
///
/// The rules it keeps:
/// - **The intent is durable before APNs is asked**: `.createAtAPNs` only follows a saved
///   intent, so a create whose answer is lost can be reconciled after a crash.
/// - **One APNs channel per gateway channel**: an id APNs gave whose save failed is kept
///   (``Stage/unsavedID(_:)``) and saved again by the next attempt, never created a second time.
/// - **A deletion is retried until APNs confirms it**, with capped back-off, across restarts
///   (the engine's `closed` phase is the durable intent), so no channel leaks toward Apple's limit.
///
/// `Waiter` is whatever the shell answers when a create settles (an HTTP request there, a
/// number in the tests).
public struct ChannelLifecycle<Waiter>: Sendable where Waiter: Sendable {
    public enum Stage: Sendable, Equatable {
        /// The create intent is being saved; APNs has not been asked.
        case intent
        /// Saved as `creating` with no APNs call under way: a create APNs refused, or one whose
        /// answer a crash lost (reconciliation at start matches it to an orphan, or creates again).
        case pending
        /// The APNs create call is out.
        case creatingAtAPNs
        /// APNs gave this id and its save is out.
        case savingID(String)
        /// Reconciliation matched this orphan APNs channel to the channel; its save is out.
        case adopting(String)
        /// The save of this id failed: the next attempt saves it again instead of asking APNs.
        case unsavedID(String)
        /// Live at APNs: the engine runs (its phases say live, ending, ended or closed).
        case active(String)
        /// The engine closed the channel: APNs is asked to delete it until it confirms.
        case deleting(String, attempts: Int)
        /// APNs confirmed the deletion of this id (or said the channel was already gone).
        case deleted(String?)
        /// The stored record could not be used (the reason; its APNs id if it had one): shown
        /// broken, takes nothing but a delete.
        case damaged(String, apnsChannelID: String?)
    }

    /// Why waiting creates were refused (the shell words the HTTP answer).
    public enum Refusal: Sendable, Equatable {
        /// The create intent could not be saved: the channel is forgotten.
        case intentNotSaved(StoreFailure)
        /// APNs refused to create the channel; `limitReached` for `CannotCreateChannelConfig`.
        case apnsRefused(String, limitReached: Bool)
        /// APNs created it but its id could not be saved (kept for the next attempt).
        case idNotSaved(StoreFailure)
    }

    public enum Action: Sendable {
        /// Store the create intent (status `creating`), then report ``Input/intentSaved(_:)``.
        case saveIntent
        /// Ask APNs for a channel, then report ``Input/apnsCreated(_:)`` or ``Input/apnsCreateFailed(_:limitReached:)``.
        case createAtAPNs
        /// Store `apnsID` as the channel's id, then report ``Input/idSaved(_:)``.
        case saveAPNsID(String)
        /// The channel is active: kickoff starts may subscribe devices to `apnsID`.
        case openKickoffs(String)
        /// Answer these waiters: the first with 201 (a new channel), the rest with 200.
        case answerCreated([Waiter])
        /// Answer this waiter (a repeat create of an active channel) with the channel, 200.
        case answerExisting(Waiter)
        /// Answer these waiters with the refusal.
        case answerRefused([Waiter], Refusal)
        /// Drop the channel from memory (its intent never reached the store).
        case forget
        /// Tell webhook receivers the app's channel limit is reached.
        case reportChannelLimit
        /// Close the kickoffs into `apnsID`, then ask APNs to delete it and report the answer.
        case deleteAtAPNs(String)
        /// Feed ``Input/deletionRetryDue`` after `delay`.
        case armDeletionRetry(after: Duration)
        /// APNs refused the deletion for good: leave the channel to an operator (log it).
        case abandonDeletion(String)
        /// Save the channel's status (it became `deleted`).
        case saveStatus
    }

    public enum Input: Sendable {
        /// A create request for this id (the first, or an idempotent repeat).
        case createRequested(Waiter)
        case intentSaved(Result<Void, StoreFailure>)
        case apnsCreated(String)
        case apnsCreateFailed(String, limitReached: Bool)
        case idSaved(Result<Void, StoreFailure>)
        /// Reconciliation at start gives the channel this orphan APNs channel.
        case adopt(String)
        /// Reconciliation found no orphan for the channel: create it again.
        case recreate
        /// The engine asked for the APNs channel's deletion (it reached `closed`).
        case deletionDue
        case deletionConfirmed
        /// APNs did not delete it; `retryable` unless the request itself can never succeed.
        case deletionFailed(retryable: Bool)
        case deletionRetryDue
        /// A rollover made this APNs channel the channel's own (``ActivityRollover``): pushes and
        /// kickoffs go to it from now on, and a deletion deletes it.
        case rolledOver(to: String)
    }

    /// A store failure as the lifecycle sees it, for the answer: its description, and whether
    /// the storage failed (a retry may succeed once it recovers) or the store refused the write.
    public struct StoreFailure: Error, Sendable, Equatable {
        public var message: String
        public var isStorageFailure: Bool
        public init(_ message: String, isStorageFailure: Bool) {
            self.message = message
            self.isStorageFailure = isStorageFailure
        }
    }

    /// Back-off between deletion attempts: 1 s doubling to 5 min, jitter half (a throttled
    /// management API recovers in seconds; a broken setup is tried every few minutes).
    public static var deletionBackoff: Backoff { Backoff(initial: .seconds(1), maximum: .seconds(300), multiplier: 2, jitter: 0.5) }

    public private(set) var stage: Stage
    /// Requests waiting for the create to settle, in arrival order.
    public private(set) var waiters: [Waiter] = []
    private var jitter: SplitMix64

    /// A new channel: its intent is about to be saved for `waiter`.
    public static func created(for waiter: Waiter, jitterSeed: UInt64) -> (ChannelLifecycle, [Action]) {
        var lifecycle = ChannelLifecycle(stage: .intent, jitterSeed: jitterSeed)
        lifecycle.waiters = [waiter]
        return (lifecycle, [.saveIntent])
    }

    /// A channel as the store kept it. What a restart re-does follows from `stage`: a `pending`
    /// channel waits for reconciliation (``Input/adopt(_:)`` or ``Input/recreate``), an active
    /// one resumes its engine (which, if it was `closed`, asks for the deletion again).
    public static func restored(apnsChannelID: String?, status: ChannelStatus, damage: String?, jitterSeed: UInt64) -> ChannelLifecycle {
        let stage: Stage = if let damage { .damaged(damage, apnsChannelID: apnsChannelID) }
            else if status == .deleted { .deleted(apnsChannelID) } else if let apnsChannelID { .active(apnsChannelID) } else { .pending }
        return ChannelLifecycle(stage: stage, jitterSeed: jitterSeed)
    }

    private init(stage: Stage, jitterSeed: UInt64) {
        self.stage = stage
        jitter = SplitMix64(seed: jitterSeed)
    }

    /// The APNs channel id the store holds (also while deleting, once deleted, and for a
    /// damaged record that had one).
    public var apnsChannelID: String? {
        switch stage {
        case .active(let id), .deleting(let id, _): id
        case .deleted(let id), .damaged(_, let id): id
        default: nil
        }
    }

    /// Active or being deleted: the engine runs and its pushes may go to APNs.
    public var isLive: Bool {
        switch stage {
        case .active, .deleting: true
        default: false
        }
    }

    /// The APNs channel a provider's delete must delete first: the saved id or one APNs gave
    /// that the store never took (so it does not leak); nil once APNs confirmed a deletion.
    public var apnsChannelToDelete: String? {
        if case .deleted = stage { return nil }
        return apnsChannelID ?? unsavedAPNsChannelID
    }

    /// An id APNs gave that the store does not hold yet (a delete must delete it too).
    public var unsavedAPNsChannelID: String? {
        switch stage {
        case .savingID(let id), .adopting(let id), .unsavedID(let id): id
        default: nil
        }
    }

    /// A create step is out (intent, APNs call, id save, adoption) or waiters wait for one: the
    /// channel cannot be deleted until it settles.
    public var isCreateUnderWay: Bool {
        switch stage {
        case .intent, .creatingAtAPNs, .savingID, .adopting: true
        default: !waiters.isEmpty
        }
    }

    /// Still without a saved APNs id and nothing under way: reconciliation's to match.
    public var awaitsReconciliation: Bool { stage == .pending && waiters.isEmpty }

    /// The status the API shows and the store keeps, given the engine's phase.
    public func status(enginePhase: ChannelEngine.Phase) -> ChannelStatus {
        switch stage {
        case .damaged: return .broken
        case .intent, .pending, .creatingAtAPNs, .savingID, .adopting, .unsavedID: return .creating
        case .deleted: return .deleted
        case .active, .deleting:
            switch enginePhase {
            case .live: return .active
            case .ending: return .ending
            case .ended, .closed: return .ended
            case .broken: return .broken
            }
        }
    }

    public mutating func handle(_ input: Input) -> [Action] {
        switch (input, stage) {
        case (.createRequested(let waiter), .active), (.createRequested(let waiter), .deleting),
             (.createRequested(let waiter), .deleted), (.createRequested(let waiter), .damaged):
            return [.answerExisting(waiter)]
        case (.createRequested(let waiter), .pending):
            waiters.append(waiter)
            stage = .creatingAtAPNs
            return [.createAtAPNs]
        case (.createRequested(let waiter), .unsavedID(let id)):
            waiters.append(waiter)
            stage = .savingID(id)
            return [.saveAPNsID(id)]
        case (.createRequested(let waiter), .intent), (.createRequested(let waiter), .creatingAtAPNs),
             (.createRequested(let waiter), .savingID), (.createRequested(let waiter), .adopting):
            waiters.append(waiter)
            return []

        case (.intentSaved(.success), .intent):
            stage = .creatingAtAPNs
            return [.createAtAPNs]
        case (.intentSaved(.failure(let failure)), .intent):
            return [.forget, .answerRefused(takeWaiters(), .intentNotSaved(failure))]

        case (.apnsCreated(let id), .creatingAtAPNs):
            stage = .savingID(id)
            return [.saveAPNsID(id)]
        case (.apnsCreateFailed(let message, let limitReached), .creatingAtAPNs):
            stage = .pending
            let refused = Action.answerRefused(takeWaiters(), .apnsRefused(message, limitReached: limitReached))
            return limitReached ? [.reportChannelLimit, refused] : [refused]

        case (.idSaved(.success), .savingID(let id)), (.idSaved(.success), .adopting(let id)):
            stage = .active(id)
            return [.openKickoffs(id), .answerCreated(takeWaiters())]
        case (.idSaved(.failure(let failure)), .savingID(let id)), (.idSaved(.failure(let failure)), .adopting(let id)):
            stage = .unsavedID(id)
            let waiting = takeWaiters()
            return waiting.isEmpty ? [] : [.answerRefused(waiting, .idNotSaved(failure))]

        case (.adopt(let id), .pending):
            stage = .adopting(id)
            return [.saveAPNsID(id)]
        case (.recreate, .pending):
            stage = .creatingAtAPNs
            return [.createAtAPNs]

        case (.deletionDue, .active(let id)):
            stage = .deleting(id, attempts: 0)
            return [.deleteAtAPNs(id)]
        case (.deletionRetryDue, .deleting(let id, _)):
            return [.deleteAtAPNs(id)]
        case (.rolledOver(let id), .active):
            stage = .active(id)
            return [.openKickoffs(id)]

        case (.deletionConfirmed, .deleting(let id, _)):
            stage = .deleted(id)
            return [.saveStatus]
        case (.deletionFailed(retryable: true), .deleting(let id, let attempts)):
            stage = .deleting(id, attempts: attempts + 1)
            return [.armDeletionRetry(after: Self.deletionBackoff.delay(attempt: attempts, using: &jitter))]
        case (.deletionFailed(retryable: false), .deleting(let id, _)):
            return [.abandonDeletion(id)]

        default:
            // An answer that no longer fits (e.g. a deletion answer after a provider's delete):
            // nothing to do.
            return []
        }
    }

    private mutating func takeWaiters() -> [Waiter] {
        defer { waiters = [] }
        return waiters
    }
}
