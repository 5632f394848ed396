/// The publishing state machine of one broadcast channel: the newest content-state in, the
/// fewest, best-timed pushes out.
///
/// Pure: no I/O and no clock of its own. Every input takes `now`, and every input returns the
/// ``Action``s the shell must perform (send a push, arm the channel's timer, persist, delete the
/// channel, mark it broken). The shell reports each push's outcome back, so the engine always
/// knows whether a push is in flight.
///
/// Rules (docs/channel-engine.md has the full list and the reasons):
/// - the latest state wins: while a push is in flight or the pace holds, newer states replace the
///   pending one; a push goes only when its state differs from the last one sent (bytes compared);
/// - one push in flight at a time, so pushes leave in order;
/// - the pace is a token bucket with per-channel adaptive back-off after 429 (``RateLimiter``);
///   critical changes also have a small reserve of their own, so they never wait behind routine
///   ones, and low-importance changes wait for a slower cadence unless a more important push
///   carries them;
/// - critical changes go at priority 10 with their alert while the rolling-hour budget lasts
///   (``PriorityBudget``), then at 5 without alert; everything else at 5;
/// - `timestamp` is strictly increasing (``TimestampClock``); `stale-date` = now + freshness;
/// - a state whose push would exceed ``maximumPayloadSize`` is refused and changes nothing;
/// - `end` carries the newest state (a pending update is folded into it, never dropped), then
///   the APNs channel is deleted after the grace period.
public struct ChannelEngine: Sendable {
    /// The payload limit the engine enforces: the Live Activity limit, safely under broadcast's 5120.
    public static let maximumPayloadSize = 4096

    public let policy: ChannelPolicy
    public let storage: ChannelStorage
    public private(set) var phase: Phase
    /// The newest accepted content-state (encoded JSON).
    public private(set) var latestState: [UInt8]?
    /// The content-state of the last push APNs accepted.
    public private(set) var lastSentState: [UInt8]?
    public private(set) var counters: Counters
    private var pending: PendingPush?
    private var inFlight: InFlight?
    private var deleteAt: UnixTime?
    private var lastAcceptedAt: UnixTime?
    private var timestamps: TimestampClock
    private var budget: PriorityBudget
    private var limiter: RateLimiter
    private var sequence: UInt64
    private let jitterSeed: UInt64
    /// The timer last asked of the shell, to avoid asking again for the same time.
    private var armedTimer: UnixTime?
    /// What the current input changed, reported as one `.persist` at its end.
    private var changed: Persisted = []

    private struct InFlight: Sendable {
        var sequence: UInt64
        var push: PendingPush
        var priority: Priority
        var sentAt: UnixTime
    }

    /// A new channel. `jitterSeed` should differ between channels (a hash of the channel id), so
    /// that channels throttled together do not retry together.
    public init(policy: ChannelPolicy = .default, storage: ChannelStorage, jitterSeed: UInt64, now: UnixTime) {
        self.init(policy: policy, storage: storage, snapshot: Snapshot(
            phase: .live, latestState: nil, lastSentState: nil, pending: nil, deleteAt: nil, timestamps: TimestampClock(),
            prioritySpends: [], lastAcceptedAt: nil,
            limiter: RateLimiter.State(fullBucketOf: policy.burst, reserve: policy.criticalBurst, now: now), sequence: 0,
            jitterSeed: jitterSeed, counters: Counters()))
    }

    /// A channel resumed from a saved snapshot. Call `tick(now:)` next: it sends what was pending
    /// and arms the timer.
    public init(policy: ChannelPolicy = .default, storage: ChannelStorage, snapshot: Snapshot) {
        self.policy = policy
        self.storage = storage
        phase = snapshot.phase
        latestState = snapshot.latestState
        lastSentState = snapshot.lastSentState
        counters = snapshot.counters
        pending = snapshot.pending
        deleteAt = snapshot.deleteAt
        lastAcceptedAt = snapshot.lastAcceptedAt
        timestamps = snapshot.timestamps
        budget = PriorityBudget(limit: policy.priorityBudgetPerHour, spends: snapshot.prioritySpends)
        limiter = RateLimiter(burst: policy.burst, minimumInterval: policy.minimumInterval, reservedBurst: policy.criticalBurst,
                              reservedInterval: policy.criticalInterval, backoff: policy.throttleBackoff, state: snapshot.limiter)
        sequence = snapshot.sequence
        jitterSeed = snapshot.jitterSeed
    }

    /// Everything that must survive a restart (a push in flight counts as pending).
    public var snapshot: Snapshot {
        let unsent = inFlight.map { flight in pending.map { flight.push.folding($0) } ?? flight.push } ?? pending
        return Snapshot(phase: phase, latestState: latestState, lastSentState: lastSentState, pending: unsent, deleteAt: deleteAt,
                        timestamps: timestamps, prioritySpends: budget.spends, lastAcceptedAt: lastAcceptedAt, limiter: limiter.state,
                        sequence: sequence,
                        jitterSeed: jitterSeed, counters: counters)
    }

    /// The state waiting to be sent, if any.
    public var pendingState: [UInt8]? { pending?.state }

    /// True while a push is out and its outcome not yet reported.
    public var hasPushInFlight: Bool { inFlight != nil }

    /// Priority-10 pushes still allowed in the rolling hour.
    public func priorityBudgetRemaining(now: UnixTime) -> Int { budget.remaining(now: now) }

    // MARK: Inputs

    /// The channel's new full content-state (after the reducer or merge patch), with the
    /// importance of the change and, for critical changes, the alert to show.
    ///
    /// Throws ``Failure/payloadTooLarge(size:limit:)`` (state unchanged) when the push for this
    /// state would exceed the limit, ``Failure/channelEnded`` after `end`, ``Failure/channelBroken``
    /// after APNs forgot the channel.
    public mutating func apply(state: JSONValue, importance: Importance, alert: LiveActivityAlert? = nil,
                               now: UnixTime) throws(Failure) -> [Action] {
        try requireLive()
        let bytes = state.encoded
        guard bytes != latestState else {
            counters.eventsApplied += 1
            counters.unchangedStates += 1
            return []
        }
        let incoming = PendingPush(state: bytes, importance: importance, alert: alert)
        try accept(incoming, now: now)
        if let pending, !pending.isEnd, pending.state == (inFlight?.push.state ?? lastSentState) {
            // Changed back to what the device has (or is about to have): nothing to send.
            self.pending = nil
        }
        return finish(pump(now: now))
    }

    /// Ends the activity: sends `event: end` with the final state (or, without one, the newest
    /// state, pending or sent) and `dismissal-date`, then deletes the channel after the grace
    /// period. Ending a broken channel only closes it.
    ///
    /// `importance` and `alert` are those of the change that produced `finalState` (a final
    /// whistle posted with the end is critical): the end push folds them in like any update, so
    /// it goes at priority 10 with that alert while the budget lasts, instead of quietly at 5.
    /// A critical update still pending is folded in the same way, whatever `importance` says.
    public mutating func end(finalState: JSONValue?, importance: Importance = .normal, alert: LiveActivityAlert? = nil,
                             dismissAt: UnixTime?, now: UnixTime) throws(Failure) -> [Action] {
        switch phase {
        case .live: break
        case .broken:
            phase = .closed
            changed.insert(.content)
            return finish([])
        case .ending, .ended, .closed: throw .channelEnded
        }
        guard let bytes = finalState?.encoded ?? latestState else { throw .noContentState }
        try accept(PendingPush(state: bytes, importance: importance, alert: alert, isEnd: true, dismissAt: dismissAt), now: now)
        phase = .ending
        return finish(pump(now: now))
    }

    /// The timer armed by `.armTimer` fired, or the channel was resumed: whatever was armed is
    /// spent. A loop timer may fire a little before its deadline by this engine's wall clock;
    /// the pace then still says "not yet" and the timer is armed again for the same time (were
    /// it kept as armed, nothing would ever fire again). Extra calls are harmless.
    public mutating func tick(now: UnixTime) -> [Action] {
        armedTimer = nil
        return finish(pump(now: now))
    }

    /// APNs accepted push `sequence`.
    public mutating func pushSucceeded(sequence: UInt64, now: UnixTime) -> [Action] {
        guard let flight = inFlight, flight.sequence == sequence else { return [] }
        inFlight = nil
        lastSentState = flight.push.state
        lastAcceptedAt = now
        limiter.recordSuccess()
        changed.formUnion([.content, .delivery])
        if flight.push.isEnd { enterEnded(now: now) }
        return finish(pump(now: now))
    }

    /// Push `sequence` failed. Throttling and transient failures keep its state pending (merged
    /// with anything newer) and retry after a back-off; `dropped` forgets it; `channelGone` stops
    /// the channel.
    public mutating func pushFailed(sequence: UInt64, _ failure: PushFailure, now: UnixTime) -> [Action] {
        guard let flight = inFlight, flight.sequence == sequence else { return [] }
        inFlight = nil
        if flight.priority == .immediate { budget.refund(spentAt: flight.sentAt) }
        changed.formUnion([.content, .delivery])
        var random = SplitMix64(seed: jitterSeed ^ (flight.sequence &* 0x9E37_79B9_7F4A_7C15))
        switch failure {
        case .throttled:
            counters.throttled += 1
            limiter.recordThrottle(now: now, using: &random)
            requeue(flight.push)
        case .retryLater:
            counters.retries += 1
            limiter.recordTransientFailure(now: now, using: &random)
            requeue(flight.push)
        case .dropped:
            counters.dropped += 1
            if flight.push.isEnd { enterEnded(now: now) }
        case .channelGone:
            phase = .broken
            pending = nil
            return finish([.markBroken(reason: Action.channelNotRegisteredReason)])
        }
        return finish(pump(now: now))
    }

    // MARK: Rules

    private func requireLive() throws(Failure) {
        switch phase {
        case .live: return
        case .broken: throw .channelBroken
        case .ending, .ended, .closed: throw .channelEnded
        }
    }

    /// Folds `incoming` into the pending push after checking its size; on failure nothing changes.
    private mutating func accept(_ incoming: PendingPush, now: UnixTime) throws(Failure) {
        let candidate = pending.map { $0.folding(incoming) } ?? incoming
        let size = payload(for: candidate, priority: candidate.importance == .critical ? .immediate : .powerConsiderate,
                           timestamp: timestamps.peek(now: now), now: now).count
        guard size <= Self.maximumPayloadSize else {
            counters.rejectedTooLarge += 1
            throw .payloadTooLarge(size: size, limit: Self.maximumPayloadSize)
        }
        counters.eventsApplied += 1
        if incoming.state != latestState { counters.stateChanges += 1 }
        if pending != nil { counters.coalesced += 1 }
        latestState = incoming.state
        pending = candidate
        changed.insert(.content)
    }

    /// Puts a failed push back, under anything newer that arrived meanwhile.
    private mutating func requeue(_ failed: PendingPush) {
        var retry = failed
        retry.deferred = false
        let merged = pending.map { retry.folding($0) } ?? retry
        pending = (!merged.isEnd && merged.state == lastSentState) ? nil : merged
    }

    private mutating func enterEnded(now: UnixTime) {
        phase = .ended
        deleteAt = now + policy.endGracePeriod
        pending = nil
    }

    /// Sends the pending push if nothing is in flight and the pace allows, or arms the timer for
    /// when it will; deletes the channel once the grace period after `end` is over.
    private mutating func pump(now: UnixTime) -> [Action] {
        if phase == .ended, let deleteAt {
            guard now >= deleteAt else { return arm(at: deleteAt) }
            phase = .closed
            self.deleteAt = nil
            changed.insert(.content)
            return [.deleteChannel]
        }
        guard phase == .live || phase == .ending, inFlight == nil, var next = pending else { return [] }
        limiter.refill(now: now)
        let critical = next.importance == .critical
        let paced = limiter.nextAllowed(now: now, reserved: critical)
        let cadence = lowImportanceDue(next, now: now)
        let allowed = max(paced, cadence ?? paced)
        guard allowed <= now else {
            if !next.deferred {
                next.deferred = true
                pending = next
                if let cadence, cadence > paced { counters.lowImportanceDeferrals += 1 } else { counters.rateLimitDeferrals += 1 }
            }
            return arm(at: allowed)
        }
        if limiter.consume(now: now, reserved: critical) == .reserved { counters.reservedPushes += 1 }
        let priority: Priority
        if next.importance == .critical, budget.spend(now: now) {
            priority = .immediate
            counters.immediatePushes += 1
        } else {
            if next.importance == .critical { counters.budgetDowngrades += 1 }
            priority = .powerConsiderate
            counters.powerConsideratePushes += 1
        }
        let timestamp = timestamps.next(now: now)
        sequence += 1
        next.deferred = false
        inFlight = InFlight(sequence: sequence, push: next, priority: priority, sentAt: now)
        pending = nil
        changed.formUnion([.content, .delivery])
        return [.send(OutgoingPush(sequence: sequence, payload: payload(for: next, priority: priority, timestamp: timestamp, now: now),
                                   priority: priority, expiration: policy.expiration(for: storage, now: now),
                                   timestamp: timestamp, isEnd: next.isEnd))]
    }

    /// The push that ends the activities on the channel's previous APNs channel after a
    /// rollover (``ActivityRollover``): `event: end` with `state`, the current content-state,
    /// dismissed at once and at priority 10, so that a phone in Low Power Mode does not keep the
    /// old activity beside the new one. Its timestamp is the channel clock's next one, later than
    /// every push the previous channel had, without taking it: the engine is left as it is (a
    /// write of the channel may be in the store), and its own pushes go to another APNs channel.
    /// It is neither paced, budgeted nor tracked: one push per rollover.
    public func previousChannelEnd(state: JSONValue, now: UnixTime) -> OutgoingPush {
        let timestamp = timestamps.peek(now: now)
        let payload = LiveActivityPayload(timestamp: timestamp, event: .end, contentState: state, dismissalDate: now,
                                          relevanceScore: policy.relevanceScore).encoded()
        return OutgoingPush(sequence: 0, payload: payload, priority: .immediate, expiration: policy.expiration(for: storage, now: now),
                            timestamp: timestamp, isEnd: true)
    }

    /// When a low-importance update may go: ``ChannelPolicy/lowImportanceInterval`` after the last
    /// accepted push (a wall clock that stepped back counts from `now`). Nil when the cadence
    /// does not apply: a more important change is folded in, it is the end, the cadence is off,
    /// or nothing was ever accepted (the first state goes at the pace).
    private func lowImportanceDue(_ push: PendingPush, now: UnixTime) -> UnixTime? {
        guard push.importance == .low, !push.isEnd, policy.lowImportanceInterval > .zero, let last = lastAcceptedAt else { return nil }
        return min(last, now) + policy.lowImportanceInterval
    }

    /// The body of the push: `alert` only at priority 10, `stale-date` only on updates,
    /// `dismissal-date` only on the end.
    private func payload(for push: PendingPush, priority: Priority, timestamp: UnixTime, now: UnixTime) -> [UInt8] {
        LiveActivityPayload(timestamp: timestamp, event: push.isEnd ? .end : .update, contentState: .raw(push.state),
                            staleDate: push.isEnd ? nil : now + policy.freshness,
                            dismissalDate: push.isEnd ? push.dismissAt : nil, relevanceScore: policy.relevanceScore,
                            alert: priority == .immediate ? push.alert : nil).encoded()
    }

    private mutating func arm(at time: UnixTime) -> [Action] {
        guard armedTimer != time else { return [] }
        armedTimer = time
        return [.armTimer(at: time)]
    }

    /// Appends the `.persist` for everything the input changed.
    private mutating func finish(_ actions: [Action]) -> [Action] {
        guard !changed.isEmpty else { return actions }
        defer { changed = [] }
        return actions + [.persist(changed)]
    }
}
