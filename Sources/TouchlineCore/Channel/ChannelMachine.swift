/// One channel's rules, composed: the publishing engine, the life at APNs, the commit gate, the
/// rollover past Apple's 8-hour limit, the feed watch and the ownership fence, behind one input
/// and one list of actions (after swift-nio-http2's `ConnectionStateMachine`, which owns its
/// streams' machines and returns one result the caller performs).
///
/// Pure: a value, no clock of its own (every input comes with `now`), no I/O. The shell
/// performs the ``Action``s in order (store writes, APNs calls, answers, timers) and reports
/// what happened as ``Input``s. The combinations the parts cannot see alone live here:
/// - the gate holds engine input while an acknowledged write is in the store, and a write's
///   pushes go out only once it commits ("nothing reaches APNs that is not on disk");
/// - a push is decided only while the gateway acts for the channel (its ``Ownership``);
///   otherwise it goes back to the engine as one to try again after a back-off;
/// - a rollover's calls to APNs and the job queue wait for the same ownership, and each of
///   its steps waits for the save before it (a failed one is retried with back-off);
/// - the feed watch takes a write's events only with its commit;
/// - after `stop` (shutdown) nothing new goes out and no timer is armed.
///
/// Timers are deadlines: ``Action/arm(_:at:)`` asks the shell for one ``Timer`` at a time of
/// each kind (arming again replaces it), and the shell reports ``Input/timerFired(_:)``.
public struct ChannelMachine<Rules: ChannelMachineRules>: Sendable {
    public typealias Request = Rules.Request
    public typealias Waiter = Rules.Waiter
    public typealias Write = Rules.Write
    public typealias Lifecycle = ChannelLifecycle<Waiter>

    /// The channel's timers; each kind has at most one deadline at a time.
    public enum Timer: Sendable, Hashable, CaseIterable {
        /// The engine's pace, back-off and deletion grace (``ChannelEngine/tick(now:)``).
        case engine
        /// The moment a live feed turns stalled (``FeedWatch``).
        case feed
        /// The next rollover, or the retry of a failed rollover step (``ActivityRollover``).
        case rollover
        /// The next attempt at deleting the APNs channel (``ChannelLifecycle``).
        case deletionRetry
    }

    /// Whether this gateway acts for the channel now.
    public enum Ownership: Sendable, Equatable {
        /// It does; `fence` is the lease's (nil on a gateway on its own, which acts for every
        /// channel, always). Every push decided carries it.
        case acting(fence: Fence?)
        /// A lease lapsed or moved: nothing is sent until it is held again.
        case notActing

        public var isActing: Bool { if case .acting = self { true } else { false } }
    }

    /// Fixed for the channel's life.
    public let rules: Rules
    public let policy: ChannelPolicy
    /// A shadow channel sends nothing to APNs: the shell accepts its pushes in APNs' place.
    public let isShadow: Bool
    /// The least time between two rollovers of a channel (`keyLimits.rolloverIntervalSeconds`).
    public let minimumRolloverInterval: Duration

    public internal(set) var state: ChannelMachineState
    public internal(set) var lifecycle: Lifecycle
    public internal(set) var gate = CommitGate<Request, HeldInput>()
    public internal(set) var rollover: ActivityRollover
    public internal(set) var feed: FeedWatch
    public internal(set) var ownership: Ownership
    /// The status last written to the store.
    public internal(set) var persistedStatus: ChannelStatus
    public internal(set) var brokenReason: String?
    /// The channel's kickoffs gave it an audience to start again on a rollover.
    public internal(set) var hasAudience: Bool
    /// Set at shutdown: nothing new goes out, no timer is armed.
    public internal(set) var isStopped = false
    /// The write in the store, with the feed watch as it will be once it commits.
    var outstanding: Outstanding?
    /// The rollover timer waits for the retry of a failed step (not for the next rollover).
    var rolloverRetryArmed = false
    /// Deadlines armed and not fired or cancelled since.
    public internal(set) var armed: [Timer: UnixTime] = [:]

    /// An acknowledged write in the store.
    struct Outstanding: Sendable {
        var write: Write
        /// The feed watch once the write's events are in it.
        var feed: FeedWatch
        /// What the watch saw in them (committed with the write).
        var reports: [FeedWatch.Report]
    }

    /// An input the engine takes that came while a write was in the store.
    public enum HeldInput: Sendable, Equatable {
        case pushAnswered(sequence: UInt64, PushOutcome)
        case engineTimer
    }

    /// How APNs (or, for a shadow channel, the gateway in its place) answered a push.
    public enum PushOutcome: Sendable, Equatable {
        case accepted
        /// A shadow channel's push, accepted by the gateway.
        case acceptedInShadow
        /// APNs refused it; `outcome` names the answer for the metrics (a reason, `HTTP503`, `no_response`).
        case failed(ChannelEngine.PushFailure, outcome: String)
    }

    /// A channel being created for `waiter` (its intent is saved first: ``Action/lifecycle(_:)``).
    public static func created(for waiter: Waiter, rules: Rules, policy: ChannelPolicy, storage: ChannelStorage, isShadow: Bool,
                               contentState: JSONValue, minimumRolloverInterval: Duration, jitterSeed: UInt64,
                               now: UnixTime) -> (ChannelMachine, [Action]) {
        let (lifecycle, actions) = Lifecycle.created(for: waiter, jitterSeed: jitterSeed)
        let machine = ChannelMachine(rules: rules, policy: policy, isShadow: isShadow, minimumRolloverInterval: minimumRolloverInterval,
                                     state: ChannelMachineState(engine: ChannelEngine(policy: policy, storage: storage, jitterSeed: jitterSeed, now: now),
                                                                contentState: contentState, lastSeq: 0),
                                     lifecycle: lifecycle, rollover: ActivityRollover(generationStartedAt: now), persistedStatus: .creating,
                                     hasAudience: false, watchingFrom: now, ownership: .acting(fence: nil))
        return (machine, actions.map(Action.lifecycle))
    }

    /// A channel as the store kept it; call ``Input/resumed`` (or the lifecycle's reconciliation)
    /// to take it up again. The feed's silence counts from `now` (the time of earlier events is
    /// not kept).
    public init(rules: Rules, policy: ChannelPolicy, isShadow: Bool, minimumRolloverInterval: Duration, state: ChannelMachineState,
                lifecycle: Lifecycle, rollover: ActivityRollover, persistedStatus: ChannelStatus, brokenReason: String? = nil,
                hasAudience: Bool, watchingFrom now: UnixTime, ownership: Ownership) {
        self.rules = rules
        self.policy = policy
        self.isShadow = isShadow
        self.minimumRolloverInterval = minimumRolloverInterval
        self.state = state
        self.lifecycle = lifecycle
        self.rollover = rollover
        feed = FeedWatch(stallAfter: policy.feedStall, watchingFrom: now)
        self.persistedStatus = persistedStatus
        self.brokenReason = brokenReason
        self.hasAudience = hasAudience
        self.ownership = ownership
    }

    // MARK: Views

    public var engine: ChannelEngine { state.engine }
    public var contentState: JSONValue { state.contentState }
    public var lastSeq: Int64 { state.lastSeq }
    /// Apple's id, once saved.
    public var apnsChannelID: String? { lifecycle.apnsChannelID }
    /// The status the API shows and the store keeps.
    public var status: ChannelStatus { lifecycle.status(enginePhase: state.engine.phase) }
    /// Set when the stored record could not be used: shown broken, takes nothing but a delete.
    public var damage: String? { if case .damaged(let reason, _) = lifecycle.stage { reason } else { nil } }
    /// An acknowledged write is in the store.
    public var isWriting: Bool { gate.isWriting }

    /// True while the match is live, when a silent feed counts as stalled: a sports channel
    /// whose state says `live`; any other between its first event and its end. A channel not
    /// active (being created, broken, damaged, ending) is never live.
    public var isFeedLive: Bool {
        guard status == .active, state.engine.phase == .live else { return false }
        return rules.followsMatchStatus ? state.contentState[member: "status"] == .string("live") : state.lastSeq > 0
    }
}
