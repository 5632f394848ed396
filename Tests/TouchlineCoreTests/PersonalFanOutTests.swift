import Foundation
import Testing
import TouchlineCore

/// A simulated APNs and audience around a `FanOutJob`, in virtual time.
///
/// Every send completes `latency` (plus 0 to 18 ms by token, so answers overtake each other) later with the outcome `script` gives for the number of requests
/// APNs has seen for that token (so a request lost in a crash still counts on APNs' side).
/// The harness checks the job's bounds and per-token back-off on every step.
private struct FanOutSimulation {
    let audience: [String]
    let script: (_ index: Int, _ requestNumber: Int) -> PersonalOutcome
    var latency: Duration = .milliseconds(10)

    var now = UnixTime(seconds: 1_767_225_600)
    var requestsSeen: [String: Int] = [:]
    var acceptedByAPNs: [String: Int] = [:]
    var inFlight: [(due: UnixTime, token: String, target: FanOutJob.TargetID)] = []
    var timer: UnixTime?
    var notBefore: [String: UnixTime] = [:]
    var deadLetters: [String: String] = [:]
    var deactivated: Set<String> = []
    var maxInFlightSeen = 0
    var maxHeldSeen = 0
    var lastSendTime: UnixTime?
    var violations: [String] = []
    /// Saved progress folded as the store would hold it, and how often to save (nil: never by itself).
    var disk = FanOutCheckpoint(cursor: nil, counters: FanOutCounters(), pending: [], endedAfterCursor: [])
    var saveEvery: Duration?
    var lastSave: UnixTime?
    var endedSinceSave: Set<String> = []
    let minimumThrottleDelay: Duration
    let minimumRetryDelay: Duration

    init(count: Int, policy: PersonalDeliveryPolicy, script: @escaping (Int, Int) -> PersonalOutcome) {
        audience = (0..<count).map { String(format: "%064x", $0) }
        self.script = script
        minimumThrottleDelay = .milliseconds(Int64(Double(policy.throttleInitialMilliseconds) * (1 - policy.jitter)))
        minimumRetryDelay = .milliseconds(Int64(Double(policy.retryInitialMilliseconds) * (1 - policy.jitter)))
    }

    func index(of token: String) -> Int { Int(token, radix: 16)! }

    /// Runs until the job finishes, or until `stopAt` (leaving sends in flight).
    mutating func run(_ job: inout FanOutJob, stopAt: UnixTime? = nil) {
        perform(job.nextSends(now: now), on: &job)
        while !job.isFinished {
            let nextCompletion = inFlight.map(\.due).min()
            guard let next = [nextCompletion, timer].compactMap({ $0 }).min() else {
                violations.append("stalled with \(job.counters.pending) pending"); return
            }
            if let stopAt, next >= stopAt { now = stopAt; return }
            now = next
            if let saveEvery, now >= (lastSave ?? now) + saveEvery || lastSave == nil { save(&job) }
            if timer.map({ $0 <= now }) == true { timer = nil }
            while let position = inFlight.firstIndex(where: { $0.due <= now }) {
                let (_, token, target) = inFlight.remove(at: position)
                let result = script(index(of: token), requestsSeen[token]! - 1)
                if result == .accepted { acceptedByAPNs[token, default: 0] += 1 }
                endedSinceSave.insert(token)
                switch result {
                case .throttledToken: notBefore[token] = now + minimumThrottleDelay
                case .retryLater, .retryOnNewConnection, .notProcessed: notBefore[token] = now + minimumRetryDelay
                default: notBefore[token] = nil
                }
                perform(job.outcome(of: target, result: result, now: now), on: &job)
            }
            perform(job.nextSends(now: now), on: &job)
        }
    }

    /// Writes the job's progress the way the store applies it: replaced cursor, counters and
    /// ended list, retry rows changed one by one.
    mutating func save(_ job: inout FanOutJob) {
        let progress = job.takeProgress()
        disk.cursor = progress.cursor
        disk.counters = progress.counters
        disk.endedAfterCursor = progress.endedAfterCursor
        var rows = Dictionary(uniqueKeysWithValues: disk.pending.map { ($0.token, $0) })
        for row in progress.retryRows { rows[row.token] = row }
        for token in progress.removedRetryRows { rows[token] = nil }
        disk.pending = rows.values.sorted { $0.token < $1.token }
        lastSave = now
        endedSinceSave = []
    }

    /// Forgets everything in flight: the process died (APNs may have seen the requests).
    /// Outcomes after the last save are forgotten with it, back-offs included.
    mutating func crash() {
        for token in endedSinceSave { notBefore[token] = nil }
        inFlight.removeAll()
        timer = nil
    }

    private mutating func perform(_ actions: [FanOutJob.Action], on job: inout FanOutJob) {
        var followUp = false
        for action in actions {
            switch action {
            case .fetchTargets(let after, let limit):
                let start = after.map { index(of: $0) + 1 } ?? 0
                let end = min(start + limit, audience.count)
                job.targetsFetched(Array(audience[start..<end]), exhausted: end == audience.count, now: now)
                followUp = true
            case .send(let token, _, let target):
                if let due = notBefore[token], now < due { violations.append("sent \(token.suffix(4)) before its back-off") }
                if let expiration = job.expiration, now >= expiration { violations.append("sent after expiration") }
                requestsSeen[token, default: 0] += 1
                inFlight.append((now + latency + .milliseconds(Int64(index(of: token) % 7) * 3), token, target))
                lastSendTime = now
            case .armTimer(let at):
                timer = at
            case .deactivateToken(let token, _):
                deactivated.insert(token)
            case .deadLetter(let token, let reason):
                deadLetters[token] = reason
            }
        }
        maxInFlightSeen = max(maxInFlightSeen, job.inFlightCount)
        maxHeldSeen = max(maxHeldSeen, job.heldCount)
        if job.inFlightCount != inFlight.count, violations.count < 20 { violations.append("job and harness disagree on in-flight") }
        if followUp { perform(job.nextSends(now: now), on: &job) }
    }
}

/// 410 for every 20th token, 429 once, 500 twice, a bad token, configuration, a lost connection,
/// and tokens that only ever get 500s.
private func mixedScript(index: Int, requestNumber: Int) -> PersonalOutcome {
    if index % 50 == 4 { return .retryLater }
    switch index % 20 {
    case 0: return .tokenDead(timestampMilliseconds: 1_767_225_600_000)
    case 1: return requestNumber == 0 ? .throttledToken : .accepted
    case 2: return requestNumber < 2 ? .retryLater : .accepted
    case 3: return .permanent(reason: "BadDeviceToken")
    case 5: return .configuration(reason: "InvalidProviderToken")
    case 6: return requestNumber == 0 ? .retryOnNewConnection : .accepted
    default: return .accepted
    }
}

@Suite struct PersonalFanOutTests {
    let policy = PersonalDeliveryPolicy(maxAttempts: 4, retryInitialMilliseconds: 200, retryMaximumMilliseconds: 5_000,
                                        throttleInitialMilliseconds: 2_000, throttleMaximumMilliseconds: 30_000)
    let limits = FanOutJob.Limits(window: 500, maxInFlight: 64, pageSize: 200)

    @Test func tenThousandTargetsAllEndAndTheCountsAddUp() {
        var simulation = FanOutSimulation(count: 10_000, policy: policy, script: mixedScript)
        var job = FanOutJob(payload: Array("{\"aps\":{}}".utf8), limits: limits, policy: policy, seed: 1)
        simulation.run(&job)

        let counters = job.counters
        #expect(simulation.violations.isEmpty, "\(simulation.violations.prefix(5))")
        #expect(job.isFinished)
        #expect(counters.targeted == 10_000)
        #expect(counters.targeted == counters.sent + counters.deadLettered + counters.expired)
        #expect(counters.pending == 0)
        #expect(counters.sent == 8_300)
        #expect(counters.expired == 0)
        #expect(counters.failedByReason == ["Unregistered": 500, "BadDeviceToken": 500, "InvalidProviderToken": 500,
                                            PersonalDeliveryPolicy.retriesExhaustedReason: 200])
        #expect(counters.deadLettered == 1_700)
        // 429 once, 500 twice, lost connection once, 500 three times before giving up.
        #expect(counters.retries == 500 + 1_000 + 500 + 200 * 3)
        #expect(simulation.deactivated.count == 500)
        #expect(simulation.deadLetters.count == 1_200)
        #expect(simulation.deadLetters.values.filter { $0 == "BadDeviceToken" }.count == 500)
        #expect(simulation.acceptedByAPNs.count == 8_300 && simulation.acceptedByAPNs.values.allSatisfy { $0 == 1 })
        #expect(simulation.maxInFlightSeen == limits.maxInFlight)
        #expect(simulation.maxHeldSeen <= limits.window)
    }

    @Test func throttledTokenIsNotSentBeforeItsBackoffWhileOthersFlow() {
        let exact = PersonalDeliveryPolicy(throttleInitialMilliseconds: 3_000, jitter: 0)
        let simulation = FanOutSimulation(count: 3, policy: exact) { index, request in
            index == 0 && request < 2 ? .throttledToken : .accepted
        }
        var job = TokenDrivenFanOut(FanOutJob(payload: [], limits: FanOutJob.Limits(window: 10, maxInFlight: 2, pageSize: 10), policy: exact, seed: 1))
        var actions = job.nextSends(now: simulation.now)
        #expect(actions == [.fetchTargets(after: nil, limit: 10)])
        job.targetsFetched(simulation.audience, exhausted: true, now: simulation.now)
        actions = job.nextSends(now: simulation.now)
        let first = simulation.audience[0], second = simulation.audience[1], third = simulation.audience[2]
        #expect(actions == [.send(token: first, attempt: 1), .send(token: second, attempt: 1)])

        let start = simulation.now
        #expect(job.outcome(token: first, result: .throttledToken, now: start).isEmpty)
        actions = job.nextSends(now: start)
        #expect(actions == [.send(token: third, attempt: 1), .armTimer(at: start + .seconds(3))])
        _ = job.outcome(token: second, result: .accepted, now: start)
        _ = job.outcome(token: third, result: .accepted, now: start)
        #expect(job.nextSends(now: start + .milliseconds(2_999)).isEmpty)
        #expect(job.nextSends(now: start + .seconds(3)) == [.send(token: first, attempt: 2)])
        _ = job.outcome(token: first, result: .throttledToken, now: start + .seconds(3))
        #expect(job.nextSends(now: start + .seconds(3)) == [.armTimer(at: start + .seconds(9))])
        #expect(job.nextSends(now: start + .seconds(9)) == [.send(token: first, attempt: 3)])
        _ = job.outcome(token: first, result: .accepted, now: start + .seconds(9))
        #expect(job.isFinished && job.counters.sent == 3 && job.counters.retries == 2)
    }

    /// A loop timer may fire a little before its deadline by the job's clock; the job must
    /// arm it again rather than assume it is still armed (the fan-out would stall).
    @Test func timerFiringEarlyIsArmedAgain() {
        var (job, start) = oneTokenJob(PersonalDeliveryPolicy(retryInitialMilliseconds: 1_000, jitter: 0))
        _ = job.outcome(token: "aa", result: .retryLater, now: start)
        #expect(job.nextSends(now: start) == [.armTimer(at: start + .seconds(1))])
        #expect(job.nextSends(now: start).isEmpty, "an armed timer is not asked for twice")
        #expect(job.timerFired(now: start + .milliseconds(999)) == [.armTimer(at: start + .seconds(1))])
        #expect(job.timerFired(now: start + .seconds(1)) == [.send(token: "aa", attempt: 2)])
    }

    @Test func expirationMidJobCountsTheRestAsExpiredAndNeverSendsLate() {
        var simulation = FanOutSimulation(count: 2_000, policy: policy) { index, request in
            index % 10 == 0 && request == 0 ? .retryLater : .accepted
        }
        let expiration = simulation.now + .milliseconds(500)
        var job = FanOutJob(payload: [], expiration: expiration,
                            limits: FanOutJob.Limits(window: 200, maxInFlight: 16, pageSize: 100), policy: policy, seed: 3)
        simulation.run(&job)

        let counters = job.counters
        #expect(simulation.violations.isEmpty, "\(simulation.violations.prefix(5))")
        #expect(job.isFinished)
        #expect(counters.targeted == 2_000)
        #expect(counters.sent > 0 && counters.expired > 0)
        #expect(counters.sent + counters.expired == 2_000)
        #expect(counters.deadLettered == 0)
        #expect(simulation.lastSendTime.map { $0 < expiration } == true)
        #expect(simulation.acceptedByAPNs.count == counters.sent)
    }

    @Test func alreadyExpiredJobSendsNothing() {
        var simulation = FanOutSimulation(count: 50, policy: policy) { _, _ in .accepted }
        var job = FanOutJob(payload: [], expiration: simulation.now, limits: limits, policy: policy, seed: 1)
        simulation.run(&job)
        #expect(simulation.requestsSeen.isEmpty)
        #expect(job.counters.targeted == 50 && job.counters.expired == 50)
    }

    /// Progress saved right before the crash: only the requests in flight are sent twice.
    @Test func restoreFromProgressSavedAtTheCrashResendsOnlyWhatWasInFlight() throws {
        try crashAndResume(saveEvery: nil)
    }

    /// Progress saved every 40 ms: what ended after the last save may be sent again too, and
    /// nothing else.
    @Test func restoreFromPeriodicProgressResendsOnlyWhatWasUnsaved() throws {
        try crashAndResume(saveEvery: .milliseconds(40))
    }

    /// Resumed, then saved at once and stopped again before it read past the tokens that had
    /// ended after its cursor (a cluster's slice taken over twice in a row, or a gateway that
    /// crashes again right after a restart): those tokens stay counted once and are not sent
    /// again. Before, the save right after the resume listed none of them, and the second resume
    /// targeted them again (a slice counted 6,512 targets of 6,298 in a 100,000-token job).
    @Test func aResumeSavedAtOnceKeepsTheTokensThatEndedAfterItsCursor() throws {
        var simulation = FanOutSimulation(count: 3_000, policy: policy, script: mixedScript)
        simulation.saveEvery = .milliseconds(40)
        var job = FanOutJob(payload: [], limits: limits, policy: policy, seed: 1)
        simulation.run(&job, stopAt: simulation.now + .milliseconds(1_005))
        simulation.crash()
        let first = simulation.disk
        #expect(!first.endedAfterCursor.isEmpty, "tokens had ended after the cursor at the first stop")

        var resumed = FanOutJob(payload: [], limits: limits, policy: policy, seed: 2, checkpoint: first)
        simulation.save(&resumed)
        #expect(Set(simulation.disk.endedAfterCursor) == Set(first.endedAfterCursor) && simulation.disk.counters == first.counters,
                "a save before anything was read again keeps what was saved")
        // Read a page again and stopped while some of it is in flight.
        simulation.run(&resumed, stopAt: simulation.now + .milliseconds(5))
        simulation.save(&resumed)
        simulation.crash()

        var again = FanOutJob(payload: [], limits: limits, policy: policy, seed: 3, checkpoint: simulation.disk)
        simulation.run(&again)
        #expect(simulation.violations.isEmpty, "\(simulation.violations.prefix(5))")
        #expect(again.isFinished)
        #expect(again.counters.targeted == 3_000 && again.counters.targeted == again.counters.sent + again.counters.deadLettered + again.counters.expired,
                "\(again.counters)")
        #expect(first.endedAfterCursor.allSatisfy { (simulation.acceptedByAPNs[$0] ?? 0) <= 1 }, "a token that had ended was sent again")
    }

    private func crashAndResume(saveEvery: Duration?) throws {
        var reference = FanOutSimulation(count: 3_000, policy: policy, script: mixedScript)
        var uninterrupted = FanOutJob(payload: [], limits: limits, policy: policy, seed: 1)
        reference.run(&uninterrupted)

        var simulation = FanOutSimulation(count: 3_000, policy: policy, script: mixedScript)
        simulation.saveEvery = saveEvery
        var job = FanOutJob(payload: [], limits: limits, policy: policy, seed: 1)
        simulation.run(&job, stopAt: simulation.now + .milliseconds(1_005))
        #expect(!job.isFinished && job.counters.sent > 0)
        let inFlightAtCrash = Set(simulation.inFlight.map(\.token))
        #expect(!inFlightAtCrash.isEmpty)
        // APNs did receive the requests in flight: accept the ones it would have accepted.
        for token in inFlightAtCrash where mixedScript(index: simulation.index(of: token), requestNumber: simulation.requestsSeen[token]! - 1) == .accepted {
            simulation.acceptedByAPNs[token, default: 0] += 1
        }
        if saveEvery == nil { simulation.save(&job) }
        let unsaved = simulation.endedSinceSave
        if saveEvery != nil { #expect(!unsaved.isEmpty, "the crash falls between two saves") }
        let saved = try JSONEncoder().encode(simulation.disk)
        simulation.crash()

        let checkpoint = try JSONDecoder().decode(FanOutCheckpoint.self, from: saved)
        var resumed = FanOutJob(payload: [], limits: limits, policy: policy, seed: 2, checkpoint: checkpoint)
        simulation.run(&resumed)

        #expect(simulation.violations.isEmpty, "\(simulation.violations.prefix(5))")
        #expect(resumed.isFinished)
        let counters = resumed.counters
        #expect(counters.targeted == 3_000)
        #expect(counters.targeted == counters.sent + counters.deadLettered + counters.expired)
        #expect(counters.sent == uninterrupted.counters.sent)
        #expect(counters.failedByReason == uninterrupted.counters.failedByReason)
        let doubleSent = simulation.acceptedByAPNs.filter { $0.value > 1 }.map(\.key)
        #expect(doubleSent.allSatisfy { inFlightAtCrash.contains($0) || unsaved.contains($0) })
        #expect(simulation.acceptedByAPNs.values.allSatisfy { $0 <= 2 })
        #expect(Set(simulation.acceptedByAPNs.keys) == Set(reference.acceptedByAPNs.keys))
    }

    /// Requests APNs provably did not process (GOAWAY above the last-stream-id, REFUSED_STREAM, no
    /// connection) are hand-backs, not attempts: three real answers plus any number of hand-backs
    /// within `maxHandBacks` still leave a fourth attempt. Before, every hand-back used one of
    /// `maxAttempts`, and tokens were dead-lettered `RetriesExhausted` after three real answers.
    @Test func handBacksDoNotUseUpAttempts() {
        // Per token: a 500, two hand-backs, a 503, a hand-back, a 500, then accepted: four answers.
        let pattern: [PersonalOutcome] = [.retryLater, .notProcessed, .notProcessed, .retryOnNewConnection, .notProcessed,
                                          .retryLater, .accepted]
        var simulation = FanOutSimulation(count: 1_000, policy: policy) { index, request in
            index % 2 == 0 ? pattern[min(request, pattern.count - 1)] : .accepted
        }
        var job = FanOutJob(payload: [], limits: limits, policy: policy, seed: 5)
        simulation.run(&job)

        #expect(simulation.violations.isEmpty, "\(simulation.violations.prefix(5))")
        #expect(job.isFinished)
        #expect(job.counters.sent == 1_000 && job.counters.deadLettered == 0)
        #expect(job.counters.retries == 500 * (pattern.count - 1), "every resend is a retry, hand-backs included")
        #expect(simulation.requestsSeen.filter { simulation.index(of: $0.key) % 2 == 0 }.values.allSatisfy { $0 == pattern.count })
    }

    /// The send numbers and the saved retry row count answers only; a resend after a hand-back
    /// keeps its attempt number, so a restart resumes with the right count.
    @Test func theSavedRetryRowCountsAnswersNotHandBacks() {
        var (job, start) = oneTokenJob(PersonalDeliveryPolicy(maxAttempts: 2, retryInitialMilliseconds: 100, jitter: 0))
        _ = job.outcome(token: "aa", result: .retryLater, now: start)
        #expect(job.timerFired(now: start + .milliseconds(100)) == [.send(token: "aa", attempt: 2)])
        _ = job.outcome(token: "aa", result: .notProcessed, now: start + .milliseconds(100))
        #expect(job.takeProgress().retryRows == [FanOutCheckpoint.PendingTarget(token: "aa", attempts: 1,
                                                                               notBeforeNanoseconds: (start + .milliseconds(200)).nanoseconds)])
        #expect(job.timerFired(now: start + .milliseconds(200)) == [.send(token: "aa", attempt: 2)])
        // The second real answer is the last one maxAttempts allows.
        #expect(job.outcome(token: "aa", result: .retryLater, now: start + .milliseconds(200))
                    == [.deadLetter(token: "aa", reason: PersonalDeliveryPolicy.retriesExhaustedReason)])
        #expect(job.isFinished && job.counters.retries == 2)
    }

    /// A transport that never recovers still ends every target: after `maxHandBacks` hand-backs,
    /// spaced by the growing retry back-off, the target is dead-lettered `NotProcessed`.
    @Test func aTransportThatNeverRecoversEndsAfterMaxHandBacks() {
        let bounded = PersonalDeliveryPolicy(maxAttempts: 2, maxHandBacks: 6, retryInitialMilliseconds: 100,
                                             retryMaximumMilliseconds: 1_000, jitter: 0)
        var simulation = FanOutSimulation(count: 40, policy: bounded) { _, _ in .notProcessed }
        var job = FanOutJob(payload: [], limits: FanOutJob.Limits(window: 40, maxInFlight: 8, pageSize: 40), policy: bounded, seed: 1)
        let start = simulation.now
        simulation.run(&job)

        #expect(simulation.violations.isEmpty, "\(simulation.violations.prefix(5))")
        #expect(job.isFinished)
        #expect(job.counters.failedByReason == [PersonalDeliveryPolicy.notProcessedReason: 40])
        #expect(simulation.requestsSeen.values.allSatisfy { $0 == 6 })
        #expect(Set(simulation.deadLetters.values) == [PersonalDeliveryPolicy.notProcessedReason])
        // Back-offs 100, 200, 400, 800, 1000 ms between the six sends: at least 2.5 s in all.
        #expect(simulation.now - start >= .milliseconds(2_500))
    }

    /// A job whose audience is the one token "aa", its first send already asked for.
    private func oneTokenJob(_ policy: PersonalDeliveryPolicy) -> (TokenDrivenFanOut, UnixTime) {
        var job = TokenDrivenFanOut(FanOutJob(payload: [], limits: FanOutJob.Limits(window: 10, maxInFlight: 1, pageSize: 10), policy: policy, seed: 1))
        let start = UnixTime(nanoseconds: 1_000_000_000_000)
        _ = job.nextSends(now: start)
        job.targetsFetched(["aa"], exhausted: true, now: start)
        #expect(job.nextSends(now: start) == [.send(token: "aa", attempt: 1)])
        return (job, start)
    }

    /// Tokens the caller leaves out of a page (started into the generation by another job) are
    /// not targets: the next page is read after the page's last token as read, the counts add
    /// up without them, and the job says which tokens it holds.
    @Test func tokensLeftOutOfAPageAreNeitherTargetedNorReadAgain() {
        var job = TokenDrivenFanOut(FanOutJob(payload: [], limits: FanOutJob.Limits(window: 10, maxInFlight: 10, pageSize: 3), policy: policy, seed: 1))
        let now = UnixTime(seconds: 1_767_225_600)
        #expect(job.nextSends(now: now) == [.fetchTargets(after: nil, limit: 3)])
        job.targetsFetched(["a1"], through: "a3", exhausted: false, now: now)
        #expect(job.holds("a1") && !job.holds("a2") && !job.holds("a3"))
        #expect(job.nextSends(now: now) == [.send(token: "a1", attempt: 1), .fetchTargets(after: "a3", limit: 3)])
        job.targetsFetched([], through: "a6", exhausted: false, now: now)
        #expect(job.nextSends(now: now) == [.fetchTargets(after: "a6", limit: 3)], "a page left out whole moves on")
        job.targetsFetched(["a7"], exhausted: true, now: now)
        _ = job.nextSends(now: now)
        _ = job.outcome(token: "a1", result: .accepted, now: now)
        _ = job.outcome(token: "a7", result: .accepted, now: now)
        #expect(job.isFinished && !job.holds("a1"))
        #expect(job.counters.targeted == 2 && job.counters.sent == 2 && job.counters.pending == 0)
        #expect(job.takeProgress().cursor == "a7")
    }

    /// A target's slot is used again once it ends, under a new generation: an outcome named by
    /// the ended target's id (a late or repeated answer) is ignored, and the new target's counts.
    @Test func anOutcomeForATargetThatEndedIsIgnoredAfterItsSlotIsReused() {
        var job = FanOutJob(payload: [], limits: FanOutJob.Limits(window: 1, maxInFlight: 1, pageSize: 1), policy: policy, seed: 1)
        let now = UnixTime(seconds: 1_767_225_600)
        #expect(job.nextSends(now: now) == [.fetchTargets(after: nil, limit: 1)])
        job.targetsFetched(["aa"], exhausted: false, now: now)
        guard case .send("aa", 1, let first)? = job.nextSends(now: now).first else { Issue.record("aa not sent"); return }
        #expect(job.outcome(of: first, result: .accepted, now: now).isEmpty)
        #expect(job.nextSends(now: now) == [.fetchTargets(after: "aa", limit: 1)])
        job.targetsFetched(["ab"], exhausted: true, now: now)
        guard case .send("ab", 1, let second)? = job.nextSends(now: now).first else { Issue.record("ab not sent"); return }
        #expect(second != first, "the slot's generation moved on")
        #expect(job.outcome(of: first, result: .tokenDead(timestampMilliseconds: nil), now: now).isEmpty)
        #expect(job.counters.sent == 1 && job.counters.deadLettered == 0 && job.inFlightCount == 1)
        #expect(job.outcome(of: second, result: .accepted, now: now).isEmpty)
        #expect(job.outcome(of: second, result: .accepted, now: now).isEmpty, "a second answer to the same send")
        #expect(job.isFinished && job.counters.sent == 2)
    }
}
