/// One personal push fanned out to every token of an audience: a state machine in virtual time.
///
/// The job does no I/O. Its methods return `Action`s for the caller (the personal dispatcher on
/// its own loop) to carry out, and it is fed tokens and outcomes back. The payload is encoded
/// once, held here and reused for every token; only the request path differs per send.
///
/// Bounds: at most `Limits.window` unended targets are held in memory (waiting, in back-off or in
/// flight), at most `Limits.maxInFlight` are in flight. The audience is pulled in pages.
public struct FanOutJob: Sendable {
    /// Memory and concurrency bounds of one job.
    public struct Limits: Sendable, Codable, Equatable {
        /// Unended targets held in memory at most.
        public var window: Int
        /// Sends in flight at most.
        public var maxInFlight: Int
        /// Tokens asked for per page (at most `window`).
        public var pageSize: Int

        public init(window: Int = 10_000, maxInFlight: Int = 256, pageSize: Int = 1_000) {
            precondition(window > 0 && maxInFlight > 0 && pageSize > 0)
            self.window = window
            self.maxInFlight = maxInFlight
            self.pageSize = min(pageSize, window)
        }
    }

    /// A target's place in the job while it has not ended: a send names it, and its outcome is
    /// reported with it (``FanOutTargets``).
    public struct TargetID: Hashable, Sendable {
        let slot: Int32
        let generation: UInt32
    }

    /// What the caller must do next.
    public enum Action: Sendable, Hashable {
        /// Fetch up to `limit` audience tokens after the token `after` (from the start if nil), in
        /// token order, then call `targetsFetched`.
        case fetchTargets(after: String?, limit: Int)
        /// Send the job's payload to `token`; `attempt` counts the sends APNs may have processed,
        /// this one included (1 for the first; a resend after a hand-back keeps its number).
        /// Report with `outcome(of: target, ...)`.
        case send(token: String, attempt: Int, target: TargetID)
        /// Call `nextSends` again at this time (a back-off or the expiration is due then).
        case armTimer(at: UnixTime)
        /// APNs said the token is dead: deactivate it unless it was registered again after the
        /// timestamp (`PersonalDeliveryPolicy.shouldDeactivate`).
        case deactivateToken(String, timestampMilliseconds: Int64?)
        /// Record the token in the dead-letter table with `reason`.
        case deadLetter(token: String, reason: String)
    }

    /// A fetched token, and its target while that has not ended (nil: ended before a restart,
    /// or expired as it was fetched).
    private struct Fetched: Sendable {
        let token: String
        let target: TargetID?
    }

    public let payload: [UInt8]
    /// `apns-priority` of every send (5 or 10).
    public let priority: Int
    /// `apns-expiration`: no send starts at or after this time (moved earlier by ``expire(at:)``).
    public private(set) var expiration: UnixTime?
    public let limits: Limits
    public let policy: PersonalDeliveryPolicy

    public private(set) var counters: FanOutCounters
    /// Audience position after the last fetched page.
    private var cursor: String?
    private var exhausted: Bool
    /// Fetched tokens, in audience order, from the first one not yet settled (ended or awaiting
    /// a retry); `settledCursor` is the token before them.
    private var unsettled: [Fetched] = []
    private var unsettledHead = 0
    private var settledCursor: String?
    /// After a restart: tokens after the resumed cursor that had already ended or await a retry;
    /// fetched again, they are skipped.
    private var accountedAfterCursor: Set<String>
    /// The targets resumed from a checkpoint's retry rows, by token, until a page meets them.
    private var resumedTargets: [String: TargetID] = [:]
    /// Targets whose retry row must be written or removed with the next progress.
    private var retryRowsChanged: [String: TargetID] = [:]
    private var retryRows: Set<String> = []
    private var fetchOutstanding = false
    private var targets = FanOutTargets()
    private var ready: [TargetID] = []
    private var readyHead = 0
    /// Sends in flight.
    public private(set) var inFlightCount = 0
    private var schedule = RetrySchedule()
    private var armedTimer: UnixTime?
    private var random: SplitMix64

    public init(payload: [UInt8], priority: Int = 10, expiration: UnixTime? = nil, limits: Limits = Limits(),
                policy: PersonalDeliveryPolicy = PersonalDeliveryPolicy(), seed: UInt64) {
        self.init(payload: payload, priority: priority, expiration: expiration, limits: limits, policy: policy, seed: seed,
                  checkpoint: FanOutCheckpoint(cursor: nil, counters: FanOutCounters(), pending: [], endedAfterCursor: []))
    }

    /// Resumes a job from its last saved progress: ended targets stay ended, targets awaiting a
    /// retry are sent when due, and the audience is fetched again after the saved cursor.
    public init(payload: [UInt8], priority: Int = 10, expiration: UnixTime? = nil, limits: Limits = Limits(),
                policy: PersonalDeliveryPolicy = PersonalDeliveryPolicy(), seed: UInt64, checkpoint: FanOutCheckpoint) {
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.limits = limits
        self.policy = policy
        self.random = SplitMix64(seed: seed)
        self.counters = checkpoint.counters
        self.cursor = checkpoint.cursor
        self.settledCursor = checkpoint.cursor
        self.exhausted = false
        self.accountedAfterCursor = Set(checkpoint.endedAfterCursor)
        for pending in checkpoint.pending {
            let notBefore = pending.notBeforeNanoseconds.map(UnixTime.init(nanoseconds:))
            let target = targets.insert(pending.token, FanOutTarget(attempts: pending.attempts, notBefore: notBefore, awaitsRetry: true))
            resumedTargets[pending.token] = target
            retryRows.insert(pending.token)
            accountedAfterCursor.insert(pending.token)
            if let notBefore { schedule.insert(target, due: notBefore) } else { ready.append(target) }
        }
    }

    /// Unended targets held in memory.
    public var heldCount: Int { targets.count }
    /// The tokens of the targets that have not ended (fetched, in flight or waiting), in no
    /// particular order.
    public var heldTokens: [String] {
        var tokens: [String] = []
        tokens.reserveCapacity(targets.count)
        targets.forEachLive { _, token, _ in tokens.append(token) }
        return tokens
    }
    /// Every target of the audience has ended (sent, dead-lettered or expired).
    public var isFinished: Bool { exhausted && targets.count == 0 && !fetchOutstanding }

    /// What to write now, in one commit, so that a restart resumes from here.
    ///
    /// Only settled targets are saved: the cursor stops before the first fetched token whose
    /// first send has not ended, tokens after it that did end are listed, and targets awaiting a
    /// retry get rows. A restart therefore re-sends only what was unsettled at the last saved
    /// progress (requests in flight, tokens fetched but not sent yet, outcomes after the save).
    public mutating func takeProgress() -> FanOutProgress {
        advanceSettledCursor()
        var counted = counters
        var endedAfterCursor: [String] = []
        for fetched in unsettled[unsettledHead...] {
            if let target = fetched.target, targets.isLive(target) {
                if !targets[target].awaitsRetry { counted.targeted -= 1 }
            } else {
                endedAfterCursor.append(fetched.token)
            }
        }
        // A resumed job's tokens that ended before the restart and are not fetched again yet:
        // its counters hold them, so its progress must list them, or the next restart would
        // target them again (and count them twice).
        endedAfterCursor += accountedAfterCursor.filter { !isResumedAndLive($0) }.sorted()
        var upserts: [FanOutCheckpoint.PendingTarget] = [], removals: [String] = []
        for (token, id) in retryRowsChanged {
            if targets.isLive(id), targets[id].awaitsRetry {
                let target = targets[id]
                upserts.append(FanOutCheckpoint.PendingTarget(token: token, attempts: target.attempts,
                                                              notBeforeNanoseconds: target.notBefore?.nanoseconds))
                retryRows.insert(token)
            } else if retryRows.remove(token) != nil {
                removals.append(token)
            }
        }
        retryRowsChanged.removeAll(keepingCapacity: true)
        return FanOutProgress(cursor: settledCursor, counters: counted, retryRows: upserts.sorted { $0.token < $1.token },
                              removedRetryRows: removals.sorted(), endedAfterCursor: endedAfterCursor)
    }

    /// What to write now, whole rather than as a change set: ``takeProgress()`` folded with
    /// every target awaiting a retry. A job whose progress is one value (a slice of a cluster's
    /// job, saved as one key) resumes from it exactly as from the folded saves.
    public mutating func takeCheckpoint() -> FanOutCheckpoint {
        let progress = takeProgress()
        var pending: [FanOutCheckpoint.PendingTarget] = []
        targets.forEachLive { _, token, target in
            guard target.awaitsRetry else { return }
            pending.append(FanOutCheckpoint.PendingTarget(token: token, attempts: target.attempts,
                                                          notBeforeNanoseconds: target.notBefore?.nanoseconds))
        }
        return FanOutCheckpoint(cursor: progress.cursor, counters: progress.counters, pending: pending.sorted { $0.token < $1.token },
                                endedAfterCursor: progress.endedAfterCursor)
    }

    /// The sends that fit in the free slots now, a page fetch if the window has room, and a
    /// timer if targets in back-off (or the expiration) become due later.
    /// `sendLimit` caps the new sends (the caller's share of a concurrency limit over all jobs).
    public mutating func nextSends(now: UnixTime, sendLimit: Int = .max) -> [Action] {
        var actions: [Action] = []
        if isExpired(at: now) {
            expireWaitingTargets()
        } else {
            while let target = schedule.popDue(at: now) {
                guard targets.isLive(target) else { continue }
                targets[target].notBefore = nil
                ready.append(target)
            }
            var allowed = sendLimit
            while allowed > 0, inFlightCount < limits.maxInFlight, let target = popReady() {
                guard targets.isLive(target) else { continue }
                allowed -= 1
                inFlightCount += 1
                targets[target].isInFlight = true
                targets[target].attempts += 1
                let sending = targets[target]
                if sending.attempts + sending.handBacks > 1 { counters.retries += 1 }
                actions.append(.send(token: targets.token(of: target), attempt: sending.attempts, target: target))
            }
        }
        // A page is fetched when the ready queue runs short and the window has room for it:
        // fetching further ahead would only hold more unsettled tokens in memory.
        if !exhausted, !fetchOutstanding, ready.count - readyHead < limits.pageSize,
           limits.window - max(targets.count, unsettledCount()) >= limits.pageSize {
            fetchOutstanding = true
            actions.append(.fetchTargets(after: cursor, limit: limits.pageSize))
        }
        if let due = nextTimer(now: now), due != armedTimer {
            armedTimer = due
            actions.append(.armTimer(at: due))
        }
        return actions
    }

    /// Ends the job's reason to send from `now` on, as if it expired then (a kickoff whose
    /// channel ended): sends in flight still report their outcome, every other target, fetched
    /// or not, counts as expired, and nothing new is sent. Call `nextSends` afterwards.
    public mutating func expire(at now: UnixTime) {
        expiration = min(expiration ?? now, now)
    }

    /// The timer of the last `armTimer` fired: nothing is armed any more. Returns `nextSends`.
    public mutating func timerFired(now: UnixTime) -> [Action] {
        armedTimer = nil
        return nextSends(now: now)
    }

    /// A page of the audience arrived, in token order (the audience is ordered by token and the
    /// next page starts after the page's last token, or after `through` when the caller left
    /// tokens out of the page: its last token as read, at or after every one given). Tokens
    /// already accounted for are ignored; after the expiration the page is counted as expired at
    /// once. Tokens left out are not targets of the job: not targeted, never sent.
    public mutating func targetsFetched(_ tokens: [String], through last: String? = nil, exhausted: Bool, now: UnixTime) {
        fetchOutstanding = false
        if let last = last ?? tokens.last { cursor = last }
        self.exhausted = exhausted
        let expired = isExpired(at: now)
        for token in tokens {
            // Only a resumed job can meet a token it has accounted for (ended before the restart,
            // or resumed from a retry row): the audience moves forward, never back.
            if !accountedAfterCursor.isEmpty, accountedAfterCursor.remove(token) != nil {
                // Ended before the restart: not targeted again, but still ended after the cursor
                // (saved as such) until the cursor passes it. A resumed target still held is
                // saved by its retry row.
                let isHeld = resumedTargets.removeValue(forKey: token).map(targets.isLive) ?? false
                if !isHeld { unsettled.append(Fetched(token: token, target: nil)) }
                continue
            }
            counters.targeted += 1
            if expired {
                counters.expired += 1
                unsettled.append(Fetched(token: token, target: nil))
            } else {
                let target = targets.insert(token, FanOutTarget(attempts: 0, notBefore: nil))
                unsettled.append(Fetched(token: token, target: target))
                ready.append(target)
            }
        }
    }

    /// The send to `target` ended with `result`. Returns what to record (deactivation, dead
    /// letter); call `nextSends` afterwards to fill the freed slot. A target not in flight (ended,
    /// or never sent) is ignored.
    public mutating func outcome(of target: TargetID, result: PersonalOutcome, now: UnixTime) -> [Action] {
        guard targets.isLive(target), targets[target].isInFlight else { return [] }
        targets[target].isInFlight = false
        inFlightCount -= 1
        if case .notProcessed = result {
            // APNs never saw this send: it was a hand-back, not an attempt.
            targets[target].attempts -= 1
            targets[target].handBacks += 1
        }
        let held = targets[target]
        switch policy.decide(result, attempt: held.attempts, handBacks: held.handBacks, using: &random) {
        case .sent:
            end(target) { $0.sent += 1 }
            return []
        case .deactivate(let timestamp):
            let token = end(target) { $0.deadLettered += 1; $0.failedByReason[PersonalDeliveryPolicy.tokenDeadReason, default: 0] += 1 }
            return [.deactivateToken(token, timestampMilliseconds: timestamp)]
        case .deadLetter(let reason):
            let token = end(target) { $0.deadLettered += 1; $0.failedByReason[reason, default: 0] += 1 }
            return [.deadLetter(token: token, reason: reason)]
        case .retry(let delay):
            if isExpired(at: now) {
                end(target) { $0.expired += 1 }
            } else {
                let due = now + delay
                targets[target].notBefore = due
                targets[target].awaitsRetry = true
                retryRowsChanged[targets.token(of: target)] = target
                schedule.insert(target, due: due)
            }
            return []
        }
    }

    private func isExpired(at now: UnixTime) -> Bool {
        guard let expiration else { return false }
        return now >= expiration
    }

    /// Ends `target`, counted by `count`; returns its token.
    @discardableResult
    private mutating func end(_ target: TargetID, _ count: (inout FanOutCounters) -> Void) -> String {
        let (token, ended) = targets.remove(target)
        if ended.awaitsRetry { retryRowsChanged[token] = target }
        count(&counters)
        return token
    }

    /// Whether `token` is a target resumed from a retry row that has not ended.
    private func isResumedAndLive(_ token: String) -> Bool {
        resumedTargets[token].map(targets.isLive) ?? false
    }

    /// Fetched tokens from the first unsettled one on.
    private mutating func unsettledCount() -> Int {
        advanceSettledCursor()
        return unsettled.count - unsettledHead
    }

    /// Moves `settledCursor` past the fetched tokens that have ended or await a retry.
    private mutating func advanceSettledCursor() {
        while unsettledHead < unsettled.count {
            let fetched = unsettled[unsettledHead]
            if let target = fetched.target, targets.isLive(target), !targets[target].awaitsRetry { break }
            settledCursor = fetched.token
            unsettledHead += 1
        }
        if unsettledHead >= 1_024, unsettledHead * 2 >= unsettled.count {
            unsettled.removeFirst(unsettledHead)
            unsettledHead = 0
        }
    }

    private mutating func popReady() -> TargetID? {
        guard readyHead < ready.count else { return nil }
        let target = ready[readyHead]
        readyHead += 1
        if readyHead >= 1_024, readyHead * 2 >= ready.count {
            ready.removeFirst(readyHead)
            readyHead = 0
        }
        return target
    }

    /// After the expiration, every target not in flight ends as expired.
    private mutating func expireWaitingTargets() {
        var waiting = schedule.removeAll()
        while let target = popReady() { waiting.append(target) }
        for target in waiting where targets.isLive(target) {
            end(target) { $0.expired += 1 }
        }
    }

    /// When `nextSends` has work again: the earliest back-off, or the expiration if anything is
    /// left to expire; `nil` if nothing waits on time.
    private func nextTimer(now: UnixTime) -> UnixTime? {
        guard let earliest = schedule.earliest else { return nil }
        if let expiration, expiration <= earliest { return expiration }
        return earliest
    }
}
