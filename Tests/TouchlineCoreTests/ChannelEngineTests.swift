import Foundation
import Testing
import TouchlineCore

/// Plays the shell around one channel engine in virtual time: performs its actions, fires its
/// timer, and answers each push at once (success unless a failure is scripted).
struct VirtualShell {
    var engine: ChannelEngine
    private(set) var now: UnixTime
    private(set) var sent: [ChannelEngine.OutgoingPush] = []
    /// Virtual time of each push in `sent`.
    private(set) var sendTimes: [UnixTime] = []
    private(set) var timer: UnixTime?
    private(set) var deletions = 0
    private(set) var brokenReasons: [String] = []
    private(set) var persisted: ChannelEngine.Persisted = []
    /// Answers for the next pushes, in order; nil = success. When empty, pushes succeed.
    var scriptedFailures: [ChannelEngine.PushFailure?] = []
    /// When false, pushes stay in flight until `answer` is called.
    var answersAtOnce = true
    private(set) var unanswered: [UInt64] = []

    init(policy: ChannelPolicy = .default, storage: ChannelStorage = .noStorage, start: UnixTime) {
        engine = ChannelEngine(policy: policy, storage: storage, jitterSeed: 7, now: start)
        now = start
    }

    /// Moves virtual time forward to `time`, firing the engine's timer on the way.
    mutating func advance(to time: UnixTime) {
        while let due = timer, due <= time {
            timer = nil
            now = max(now, due)
            perform(engine.tick(now: now))
        }
        now = time
    }

    /// Fires the armed timer at `time`, before its deadline: a loop timer can run a little ahead
    /// of the wall clock the engine reads.
    mutating func fireTimerEarly(at time: UnixTime) {
        guard timer != nil else { return }
        timer = nil
        now = time
        perform(engine.tick(now: now))
    }

    /// Sets the wall clock without firing timers (it may go backwards).
    mutating func setClock(_ time: UnixTime) { now = time }

    mutating func apply(_ state: JSONValue, _ importance: Importance = .normal, alert: LiveActivityAlert? = nil,
                        at time: UnixTime? = nil) throws(ChannelEngine.Failure) {
        if let time { advance(to: time) }
        perform(try engine.apply(state: state, importance: importance, alert: alert, now: now))
    }

    mutating func end(_ finalState: JSONValue? = nil, _ importance: Importance = .normal, alert: LiveActivityAlert? = nil,
                      dismissAt: UnixTime? = nil, at time: UnixTime? = nil) throws(ChannelEngine.Failure) {
        if let time { advance(to: time) }
        perform(try engine.end(finalState: finalState, importance: importance, alert: alert, dismissAt: dismissAt, now: now))
    }

    mutating func answer(_ failure: ChannelEngine.PushFailure? = nil) {
        let sequence = unanswered.removeFirst()
        respond(sequence, failure)
    }

    private mutating func respond(_ sequence: UInt64, _ failure: ChannelEngine.PushFailure?) {
        if let failure {
            perform(engine.pushFailed(sequence: sequence, failure, now: now))
        } else {
            perform(engine.pushSucceeded(sequence: sequence, now: now))
        }
    }

    mutating func perform(_ actions: [ChannelEngine.Action]) {
        for action in actions {
            switch action {
            case .send(let push):
                sent.append(push)
                sendTimes.append(now)
                if answersAtOnce {
                    respond(push.sequence, scriptedFailures.isEmpty ? nil : scriptedFailures.removeFirst())
                } else {
                    unanswered.append(push.sequence)
                }
            case .armTimer(let time): timer = time
            case .persist(let parts): persisted.formUnion(parts)
            case .deleteChannel: deletions += 1
            case .markBroken(let reason): brokenReasons.append(reason)
            }
        }
    }
}

extension ChannelEngine.OutgoingPush {
    /// The `aps` dictionary of the payload.
    var aps: [String: Any] {
        let body = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        return body?["aps"] as? [String: Any] ?? [:]
    }
    var contentState: [String: Any] { aps["content-state"] as? [String: Any] ?? [:] }
    var minute: Int? { contentState["minute"] as? Int }
    var event: String? { aps["event"] as? String }
    var hasAlert: Bool { aps["alert"] != nil }
}

func match(home: Int64 = 0, away: Int64 = 0, minute: Int64, tick: Int64 = 0) -> JSONValue {
    ["home": .integer(home), "away": .integer(away), "minute": .integer(minute), "tick": .integer(tick)]
}

let goalAlert = LiveActivityAlert(title: "Goal!", body: "Home 1-0 Away", sound: "default")

@Suite struct ChannelEngineTests {
    let t0 = UnixTime(seconds: 1_767_290_400)
    /// Default pace and budget, deterministic back-off (no jitter).
    let policy = ChannelPolicy(throttleBackoff: Backoff(initial: .seconds(4), maximum: .seconds(120), multiplier: 2, jitter: 0))
    /// The same without a critical reserve or low cadence: every change waits for the shared
    /// bucket, so changes fold while they wait (what the folding rules are about).
    var uniformPolicy: ChannelPolicy { ChannelEnginePacingTests.uniform(policy) }

    /// Spends the burst so that the next update has to wait.
    func spendTheBurst(_ shell: inout VirtualShell) throws {
        for minute in 1...Int64(policy.burst) { try shell.apply(match(minute: minute)) }
        #expect(shell.sent.count == policy.burst)
    }

    @Test func fiftyEventsPerSecondForAMinuteCoalesceToExactlyTheRateLimit() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        let events = 50 * 60
        for k in 0..<events {
            try shell.apply(match(minute: 10, tick: Int64(k)), at: t0 + .milliseconds(20 * k))
        }
        shell.advance(to: t0 + .seconds(600))
        // The bucket allows its burst at once, then one push per interval over the 60 s.
        let allowed = policy.burst + Int((Duration.seconds(60) / policy.minimumInterval).rounded(.down))
        #expect(shell.sent.count == allowed)
        #expect(allowed == 33)
        #expect(shell.sent.last?.contentState["tick"] as? Int == events - 1)
        // After the burst, pushes are exactly one interval apart.
        #expect(Array(shell.sendTimes.suffix(30)) == (1...30).map { t0 + policy.minimumInterval * $0 })
        let counters = shell.engine.counters
        #expect(counters.eventsApplied == events)
        #expect(counters.powerConsideratePushes == allowed && counters.immediatePushes == 0)
        #expect(counters.coalesced == events - allowed)
        #expect(counters.rateLimitDeferrals == 30)
    }

    /// A timer that fires a little before its deadline by the engine's clock must be armed again:
    /// the engine used to keep believing it was armed, and the deferred push (here an end) never
    /// went. Found by the matchday load test: a few channels stayed `ending` for good.
    @Test func aTimerFiringEarlyIsArmedAgainAndTheDeferredPushStillGoes() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try spendTheBurst(&shell)
        try shell.end(match(minute: 90))
        let due = try #require(shell.timer)
        shell.fireTimerEarly(at: due - .microseconds(300))
        #expect(shell.timer == due)
        shell.advance(to: due)
        #expect(shell.sent.last?.event == "end")
        #expect(shell.sent.count == policy.burst + 1)
    }

    @Test func criticalChangesAlertAtPriorityTenUntilTheBudgetIsSpentThenGoAtFive() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        for goal in 0..<12 {
            try shell.apply(match(home: Int64(goal + 1), minute: Int64(goal)), .critical, alert: goalAlert, at: t0 + .seconds(10 * goal))
        }
        #expect(shell.sent.map(\.priority.rawValue) == Array(repeating: 10, count: 10) + [5, 5])
        #expect(shell.sent.map(\.hasAlert) == Array(repeating: true, count: 10) + [false, false])
        #expect(shell.engine.counters.budgetDowngrades == 2)
        #expect(shell.engine.priorityBudgetRemaining(now: shell.now) == 0)

        // One second before the first spend leaves the window: still downgraded.
        try shell.apply(match(home: 20, minute: 59), .critical, alert: goalAlert, at: t0 + .seconds(3599))
        #expect(shell.sent.last?.priority == .powerConsiderate)
        // Once it has left, critical changes alert again. Normal changes never take the budget.
        try shell.apply(match(home: 21, minute: 60), .critical, alert: goalAlert, at: t0 + .seconds(3601))
        #expect(shell.sent.last?.priority == .immediate && shell.sent.last?.hasAlert == true)
        try shell.apply(match(home: 21, minute: 61), .normal, alert: goalAlert, at: t0 + .seconds(3700))
        #expect(shell.sent.last?.priority == .powerConsiderate && shell.sent.last?.hasAlert == false)
        #expect(shell.engine.counters.budgetDowngrades == 3)
    }

    @Test func aGoalCoalescedWithALaterClockTickStillGoesAsCriticalWithItsAlert() throws {
        var shell = VirtualShell(policy: uniformPolicy, start: t0)
        try spendTheBurst(&shell)
        try shell.apply(match(home: 1, minute: 4), .critical, alert: goalAlert, at: t0 + .milliseconds(500))
        try shell.apply(match(home: 1, minute: 4, tick: 1), .low, at: t0 + .milliseconds(900))
        shell.advance(to: t0 + .seconds(2))
        let push = try #require(shell.sent.last)
        #expect(shell.sent.count == 4)
        #expect(push.priority == .immediate)
        #expect((push.aps["alert"] as? [String: Any])?["title"] as? String == "Goal!")
        #expect(push.contentState["tick"] as? Int == 1)
    }

    @Test func timestampsIncreaseStrictlyAcrossSameSecondPushesAndAClockSteppingBack() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try spendTheBurst(&shell)  // three pushes within the same second
        try shell.apply(match(minute: 10), at: t0 + .seconds(2))
        shell.setClock(t0 - .seconds(600))
        try shell.apply(match(minute: 11))
        shell.advance(to: t0 - .seconds(590))
        try shell.apply(match(minute: 12))
        shell.advance(to: t0 + .seconds(3600))
        let stamps = shell.sent.map(\.timestamp.seconds)
        #expect(stamps.count == 6)
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        #expect(Array(stamps.prefix(3)) == [t0.seconds, t0.seconds + 1, t0.seconds + 2])
        #expect(shell.sent.map { $0.aps["timestamp"] as? Int64 } == stamps)
        // The channel did not stall while the clock was ten minutes behind.
        #expect(shell.sent[4].minute == 11 && shell.sent[5].minute == 12)
    }

    @Test func stalenessAndRelevanceAndExpirationFollowThePolicy() throws {
        var noStorage = VirtualShell(policy: policy, start: t0)
        try noStorage.apply(match(minute: 1))
        let push = try #require(noStorage.sent.first)
        #expect(push.aps["stale-date"] as? Int64 == t0.seconds + 1200)
        #expect(push.aps["relevance-score"] as? Int == 100)
        #expect(push.expiration == 0)
        var mostRecent = VirtualShell(policy: policy, storage: .mostRecent, start: t0)
        try mostRecent.apply(match(minute: 1))
        #expect(mostRecent.sent.first?.expiration == t0.seconds + 900)
    }

    @Test func anUnchangedStateMakesNoPushAndARevertedOneCancelsThePending() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try shell.apply(match(minute: 1))
        try shell.apply(match(minute: 1), at: t0 + .seconds(5))
        #expect(shell.sent.count == 1)
        #expect(shell.engine.counters.unchangedStates == 1)


        var reverted = VirtualShell(policy: uniformPolicy, start: t0)
        try spendTheBurst(&reverted)
        try reverted.apply(match(home: 1, minute: 3), .critical, alert: goalAlert)
        try reverted.apply(match(minute: 3), .normal)  // goal disallowed before it went out
        #expect(reverted.engine.pendingState == nil)
        reverted.advance(to: t0 + .seconds(600))
        #expect(reverted.sent.count == policy.burst)
    }

    @Test func theFinalStateIsNeverLostToCoalescing() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try spendTheBurst(&shell)
        try shell.apply(match(home: 2, away: 1, minute: 90))
        try shell.end(dismissAt: t0 + .seconds(900))
        #expect(shell.sent.count == 3)
        #expect(throws: ChannelEngine.Failure.channelEnded) { try shell.apply(match(minute: 91)) }
        shell.advance(to: t0 + .seconds(2))
        let end = try #require(shell.sent.last)
        #expect(shell.sent.count == 4)
        #expect(end.isEnd && end.event == "end")
        #expect(end.contentState["home"] as? Int == 2 && end.contentState["minute"] as? Int == 90)
        #expect(end.aps["dismissal-date"] as? Int64 == t0.seconds + 900)
        #expect(end.aps["stale-date"] == nil)

        // The channel is deleted once the grace period after the accepted end is over.
        shell.advance(to: t0 + .seconds(2) + policy.endGracePeriod - .seconds(1))
        #expect(shell.deletions == 0)
        shell.advance(to: t0 + .seconds(2) + policy.endGracePeriod)
        #expect(shell.deletions == 1)
        #expect(shell.engine.phase == .closed)
    }

    @Test func anEndNeedsAStateAndComesOnlyOnce() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        #expect(throws: ChannelEngine.Failure.noContentState) { try shell.end() }
        #expect(shell.engine.phase == .live)
        try shell.end(match(minute: 0))
        #expect(throws: ChannelEngine.Failure.channelEnded) { try shell.end(match(minute: 1)) }
        #expect(shell.sent.count == 1 && shell.sent[0].isEnd)
    }

    @Test func anEndWithAFinalStateKeepsThePendingGoalAlert() throws {
        var shell = VirtualShell(policy: uniformPolicy, start: t0)
        try spendTheBurst(&shell)
        try shell.apply(match(home: 1, minute: 90), .critical, alert: goalAlert)
        try shell.end(match(home: 1, minute: 94))
        shell.advance(to: t0 + .seconds(2))
        let end = try #require(shell.sent.last)
        #expect(shell.sent.count == 4 && end.isEnd)
        #expect(end.minute == 94 && end.priority == .immediate && end.hasAlert)
    }

    /// A final whistle posted with the end (`POST /v1/channels/{id}/end` with an `event`) is a
    /// critical change: with budget left the end push goes at priority 10 with its alert. It went
    /// at 5 without alert because the end was always built as a normal change.
    @Test func aCriticalChangeCarriedByTheEndGoesAtPriorityTenWithItsAlert() throws {
        let whistle = LiveActivityAlert(title: "Full time", body: "Home 2-1 Away")
        var shell = VirtualShell(policy: policy, start: t0)
        try shell.apply(match(home: 2, away: 1, minute: 90))
        try shell.end(match(home: 2, away: 1, minute: 94), .critical, alert: whistle, dismissAt: t0 + .seconds(900),
                      at: t0 + .seconds(10))
        let end = try #require(shell.sent.last)
        #expect(shell.sent.count == 2 && end.isEnd)
        #expect(end.priority == .immediate)
        #expect((end.aps["alert"] as? [String: Any])?["title"] as? String == "Full time")
        #expect(end.aps["dismissal-date"] as? Int64 == t0.seconds + 900)
        #expect(shell.engine.counters.immediatePushes == 1 && shell.engine.counters.budgetDowngrades == 0)

        // Held back by the pace, the folded end keeps its importance and alert too.
        var paced = VirtualShell(policy: policy, start: t0)
        try spendTheBurst(&paced)
        try paced.apply(match(home: 1, minute: 93), .low)
        try paced.end(match(home: 2, minute: 94), .critical, alert: whistle)
        paced.advance(to: t0 + .seconds(2))
        let pacedEnd = try #require(paced.sent.last)
        #expect(paced.sent.count == policy.burst + 1 && pacedEnd.isEnd && pacedEnd.minute == 94)
        #expect(pacedEnd.priority == .immediate && pacedEnd.hasAlert)
    }

    @Test func aCriticalEndBeyondTheBudgetGoesAtFiveWithoutItsAlert() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        for goal in 0..<policy.priorityBudgetPerHour {
            try shell.apply(match(home: Int64(goal + 1), minute: Int64(goal)), .critical, alert: goalAlert, at: t0 + .seconds(10 * goal))
        }
        #expect(shell.engine.priorityBudgetRemaining(now: shell.now) == 0)
        try shell.end(match(home: 20, minute: 90), .critical, alert: goalAlert, at: t0 + .seconds(600))
        let end = try #require(shell.sent.last)
        #expect(end.isEnd && end.priority == .powerConsiderate && !end.hasAlert)
        #expect(shell.engine.counters.budgetDowngrades == 1)
    }

    /// A normal end must not drop the importance of a critical update still pending, nor take
    /// its alert away; an end's own alert replaces the pending one.
    @Test func theEndsOwnAlertWinsOverThePendingOneAndImportanceOnlyFoldsUpwards() throws {
        let whistle = LiveActivityAlert(title: "Full time", body: "Home 1-0 Away")
        var shell = VirtualShell(policy: policy, start: t0)
        try spendTheBurst(&shell)
        try shell.apply(match(home: 1, minute: 90), .critical, alert: goalAlert)
        try shell.end(match(home: 1, minute: 94), .critical, alert: whistle)
        shell.advance(to: t0 + .seconds(2))
        let end = try #require(shell.sent.last)
        #expect(end.isEnd && end.priority == .immediate)
        #expect((end.aps["alert"] as? [String: Any])?["title"] as? String == "Full time")
    }

    @Test func anEndWaitsForTheUpdateInFlightAndCarriesTheNewestStateAfterA429() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.answersAtOnce = false
        try shell.apply(match(minute: 89))
        try shell.apply(match(minute: 90))
        try shell.end(match(minute: 95))
        #expect(shell.sent.count == 1)
        shell.answer(.throttled)
        shell.advance(to: t0 + .seconds(4))
        #expect(shell.sent.count == 2)
        #expect(shell.sent[1].isEnd && shell.sent[1].minute == 95)
        shell.answer()
        #expect(shell.engine.phase == .ended)
    }

    @Test func anOversizedStateIsRefusedAndChangesNothing() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        try shell.apply(match(minute: 1))
        let before = shell.engine.snapshot
        let huge: JSONValue = ["home": 0, "away": 0, "minute": 2, "commentary": .string(String(repeating: "x", count: 4000))]
        let expectedSize = LiveActivityPayload(timestamp: UnixTime(seconds: t0.seconds + 1), event: .update, contentState: huge,
                                               staleDate: t0 + .seconds(1200), relevanceScore: 100).encoded().count
        #expect(expectedSize > 4096)
        #expect(throws: ChannelEngine.Failure.payloadTooLarge(size: expectedSize, limit: 4096)) { try shell.apply(huge) }
        var after = shell.engine.snapshot
        after.counters.rejectedTooLarge -= 1
        #expect(after == before)
        #expect(shell.sent.count == 1)

        // Just under the limit is fine.
        let fitting: JSONValue = ["home": 0, "away": 0, "minute": 2, "commentary": .string(String(repeating: "x", count: 4000 - (expectedSize - 4096)))]
        try shell.apply(fitting)
        #expect(shell.sent.last?.payload.count == 4096)
    }

    @Test func a429DelaysOnlyThatChannelAndResendsTheNewestState() throws {
        var throttled = VirtualShell(policy: policy, start: t0)
        var other = VirtualShell(policy: policy, start: t0)
        throttled.scriptedFailures = [nil, .throttled]
        for k in 0..<20 {
            let time = t0 + .milliseconds(500 * k)
            try throttled.apply(match(minute: Int64(k)), at: time)
            try other.apply(match(minute: Int64(k)), at: time)
        }
        throttled.advance(to: t0 + .seconds(60))
        other.advance(to: t0 + .seconds(60))

        // The other channel keeps its pace: burst at 0, 0.5, 1 s, then one push per 2 s (a timer
        // due at the same time as an event fires first).
        #expect(other.sent.map(\.minute) == [0, 1, 2, 3, 7, 11, 15, 19])
        #expect(other.sendTimes.map { ($0 - t0) / .milliseconds(500) } == [0, 1, 2, 4, 8, 12, 16, 20])
        // The throttled one: push 2 (at 0.5 s) gets 429; nothing until the 4 s back-off is over,
        // then the newest state, then at the doubled 4 s interval.
        #expect(throttled.sent.map(\.minute) == [0, 1, 8, 16, 19])
        #expect(throttled.sendTimes.map { ($0 - t0) / .milliseconds(500) } == [0, 1, 9, 17, 25])
        #expect(throttled.engine.counters.throttled == 1)
    }

    @Test func aTransientFailureRetriesTheNewestStateAfterTheBackoff() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.scriptedFailures = [.retryLater]
        try shell.apply(match(minute: 1))
        try shell.apply(match(minute: 2), at: t0 + .seconds(1))
        shell.advance(to: t0 + .seconds(30))
        #expect(shell.sent.map(\.minute) == [1, 2])
        #expect(shell.sent[1].timestamp.seconds == t0.seconds + 4)
        #expect(shell.engine.counters.retries == 1)
        #expect(shell.engine.lastSentState == match(minute: 2).encoded)
    }

    @Test func aFailedPriorityTenPushGivesItsBudgetBack() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.scriptedFailures = [.retryLater]
        try shell.apply(match(home: 1, minute: 1), .critical, alert: goalAlert)
        shell.advance(to: t0 + .seconds(30))
        #expect(shell.sent.map(\.priority) == [.immediate, .immediate])
        #expect(shell.engine.priorityBudgetRemaining(now: shell.now) == policy.priorityBudgetPerHour - 1)
    }

    @Test func aDroppedPushIsForgottenAndNewerStatesStillGo() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.scriptedFailures = [.dropped]
        try shell.apply(match(minute: 1))
        shell.advance(to: t0 + .seconds(10))
        #expect(shell.sent.count == 1 && shell.engine.pendingState == nil)
        try shell.apply(match(minute: 2))
        #expect(shell.sent.map(\.minute) == [1, 2])
        #expect(shell.engine.counters.dropped == 1)
    }

    @Test func aGoneChannelIsMarkedBrokenAndGetsNoMorePushes() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.answersAtOnce = false
        try shell.apply(match(minute: 1))
        try shell.apply(match(minute: 2))
        shell.answer(.channelGone)
        #expect(shell.brokenReasons.count == 1 && shell.brokenReasons[0].contains("ChannelNotRegistered"))
        #expect(shell.engine.phase == .broken)
        #expect(throws: ChannelEngine.Failure.channelBroken) { try shell.apply(match(minute: 3)) }
        shell.advance(to: t0 + .seconds(600))
        #expect(shell.sent.count == 1)
        // Ending it only closes it: there is nothing to send to and nothing to delete.
        try shell.end()
        #expect(shell.engine.phase == .closed && shell.sent.count == 1 && shell.deletions == 0)
    }

    @Test func aStaleAnswerForAnotherSequenceIsIgnored() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.answersAtOnce = false
        try shell.apply(match(minute: 1))
        #expect(shell.engine.pushSucceeded(sequence: 99, now: t0).isEmpty)
        #expect(shell.engine.hasPushInFlight)
    }

    @Test func aSnapshotRestoredFromJSONContinuesIdentically() throws {
        var original = VirtualShell(policy: policy, start: t0)
        original.scriptedFailures = [nil, .throttled]
        for k in 0..<10 {
            try original.apply(match(home: Int64(k / 4), minute: Int64(k)), k % 4 == 0 ? .critical : .low, alert: goalAlert,
                               at: t0 + .milliseconds(700 * k))
        }
        #expect(original.engine.pendingState != nil && !original.engine.hasPushInFlight)
        let data = try JSONEncoder().encode(original.engine.snapshot)
        var restored = original
        restored.engine = ChannelEngine(policy: policy, storage: .noStorage,
                                        snapshot: try JSONDecoder().decode(ChannelEngine.Snapshot.self, from: data))
        #expect(restored.engine.snapshot == original.engine.snapshot)

        let sentBefore = original.sent.count
        func continueMatch(_ shell: inout VirtualShell) throws {
            shell.perform(shell.engine.tick(now: shell.now))
            for k in 10..<40 {
                try shell.apply(match(home: Int64(k / 4), minute: Int64(k)), k % 4 == 0 ? .critical : .low, alert: goalAlert,
                                at: t0 + .milliseconds(700 * k))
            }
            try shell.end(at: t0 + .seconds(40))
            shell.advance(to: t0 + .seconds(3600))
        }
        try continueMatch(&original)
        try continueMatch(&restored)
        #expect(original.sent.count > sentBefore + 5)
        #expect(restored.sent == original.sent)
        #expect(restored.engine.snapshot == original.engine.snapshot)
        #expect(restored.deletions == 1)
    }

    @Test func aPushInFlightAtSnapshotTimeIsSentAgainAfterTheRestore() throws {
        var shell = VirtualShell(policy: policy, start: t0)
        shell.answersAtOnce = false
        try shell.apply(match(home: 1, minute: 1), .critical, alert: goalAlert)
        let snapshot = shell.engine.snapshot
        #expect(snapshot.pending?.alert == goalAlert)
        var restarted = VirtualShell(policy: policy, start: t0)
        restarted.engine = ChannelEngine(policy: policy, storage: .noStorage, snapshot: snapshot)
        restarted.perform(restarted.engine.tick(now: t0 + .seconds(1)))
        let resent = try #require(restarted.sent.first)
        #expect(resent.minute == 1 && resent.hasAlert)
        #expect(resent.timestamp.seconds > shell.sent[0].timestamp.seconds)
    }
}
