import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore

/// The contract of personal jobs, dead letters and idempotency records: ``PersonalStoreWriter``
/// and ``PersonalJobReader``, on every implementation.
@Suite(.heavy) struct PersonalJobContractTests {
    static func write(_ store: any PersonalStoreUnderTest, _ operations: [TokenOperation]) -> Result<Void, StoreError> {
        awaitResult { store.personalWriter.submit(operations, completion: $0) }
    }

    /// A scheduled kickoff keeps its start time; one finished before it was cancelled, and no
    /// resume picks it up.
    @Test(arguments: PersonalStoreKind.allCases)
    func aScheduledJobKeepsItsStartTimeAndCanBeCancelled(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        var scheduled = job("later", at: t0)
        scheduled.startAt = t0 + .seconds(3600)
        try Self.write(store, [.createJob(scheduled), .createJob(job("now", at: t0 + .seconds(1)))]).get()
        let reader = try store.personalReader()
        defer { reader.close() }
        #expect(try reader.job(id: "later")?.startAt == t0 + .seconds(3600))
        #expect(try reader.job(id: "now")?.startAt == nil)
        #expect(try reader.job(id: "later")?.wasCancelled == false)
        try Self.write(store, [.advanceJob(PersonalJobProgress(jobID: "later", cursor: nil, counts: PersonalJobCounts(), status: .done,
                                                               at: t0 + .seconds(5)))]).get()
        #expect(try reader.job(id: "later")?.wasCancelled == true && reader.job(id: "later")?.startAt == t0 + .seconds(3600))
        #expect(try reader.jobs(status: .pending, limit: 10).map(\.id) == ["now"])
        // What the API shows is read on its own, and agrees with the whole record.
        for id in ["later", "now"] {
            let summary = try #require(try reader.jobSummary(id: id))
            #expect(summary == PersonalJobSummary(try #require(try reader.job(id: id))))
        }
        #expect(try reader.jobSummary(id: "later")?.wasCancelled == true && reader.jobSummary(id: "now")?.wasCancelled == false)
    }

    /// The summary the API polls carries the job's app.
    @Test(arguments: PersonalStoreKind.allCases)
    func aJobsSummaryNamesItsApp(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        var other = job("other", at: t0)
        other.app = "com.example.other"
        try Self.write(store, [.createJob(other)]).get()
        let reader = try store.personalReader()
        defer { reader.close() }
        #expect(try reader.jobSummary(id: "other")?.app == "com.example.other")
        #expect(try reader.jobSummary(id: "missing") == nil)
    }

    /// A job waiting for its time takes a new payload (moved to another channel); one that
    /// started keeps the payload it runs with.
    @Test(arguments: PersonalStoreKind.allCases)
    func onlyAWaitingJobIsRetargeted(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        var waiting = job("waiting", at: t0)
        waiting.startAt = t0 + .seconds(3600)
        try Self.write(store, [.createJob(waiting), .createJob(job("running", at: t0))]).get()
        try Self.write(store, [.advanceJob(PersonalJobProgress(jobID: "running", cursor: nil, counts: PersonalJobCounts(), status: .running,
                                                               at: t0 + .seconds(1)))]).get()
        try Self.write(store, [.retargetScheduledJob(jobID: "waiting", payload: [1, 2, 3]), .retargetScheduledJob(jobID: "running", payload: [4]),
                               .retargetScheduledJob(jobID: "unknown", payload: [5])]).get()
        let reader = try store.personalReader()
        defer { reader.close() }
        #expect(try reader.job(id: "waiting")?.payload == [1, 2, 3])
        #expect(try reader.job(id: "running")?.payload == job("running", at: t0).payload)
    }

    /// The devices started into each APNs channel: recorded (repeats are harmless), told apart
    /// by channel and read back among a page of tokens (whatever their case), and forgotten
    /// with the channel.
    @Test(arguments: PersonalStoreKind.allCases)
    func startsAreRecordedPerChannelAndForgottenWithIt(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        try Self.write(store, [.recordStarts(channel: "gen-1", tokens: [hexToken(1), hexToken(2)]),
                               .recordStarts(channel: "gen-2", tokens: [hexToken(3)])]).get()
        try Self.write(store, [.recordStarts(channel: "gen-1", tokens: [hexToken(2)])]).get()
        let reader = try store.personalReader()
        defer { reader.close() }
        let page = [hexToken(1), hexToken(2).uppercased(), hexToken(3), hexToken(4)]
        #expect(try reader.startedTokens(among: page, into: "gen-1") == [hexToken(1), hexToken(2).uppercased()])
        #expect(try reader.startedTokens(among: page, into: "gen-2") == [hexToken(3)])
        #expect(try reader.startedTokens(among: [], into: "gen-1").isEmpty)
        #expect(try reader.hasStarts(into: "gen-1") && reader.hasStarts(into: "gen-2"))
        #expect(try !reader.hasStarts(into: "gen-3"))
        try Self.write(store, [.forgetStarts(channel: "gen-1")]).get()
        #expect(try reader.startedTokens(among: page, into: "gen-1").isEmpty)
        #expect(try !reader.hasStarts(into: "gen-1"))
        #expect(try reader.startedTokens(among: page, into: "gen-2") == [hexToken(3)], "another channel's stay")
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func aJobIsCheckpointedWithItsOutcomesAndFinished(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        try Self.write(store, [.createJob(job("j2", at: t0 + .seconds(2))), .createJob(job("j1", at: t0 + .seconds(1)))]).get()
        let reader = try store.personalReader()
        defer { reader.close() }
        #expect(try reader.jobs(status: .pending, limit: 10).map(\.id) == ["j1", "j2"], "oldest first")

        let counts = PersonalJobCounts(targeted: 4, sent: 1, failed: ["BadDeviceToken": 1], pending: 2)
        try Self.write(store, [
            .scheduleRetry(PersonalJobRetry(jobID: "j1", token: hexToken(3), attempts: 1, retryAt: t0 + .seconds(30))),
            .scheduleRetry(PersonalJobRetry(jobID: "j1", token: hexToken(2), attempts: 2, retryAt: t0 + .seconds(20))),
            .deadLetter(DeadLetterRecord(jobID: "j1", token: hexToken(1), reason: "BadDeviceToken", at: t0)),
            .advanceJob(PersonalJobProgress(jobID: "j1", cursor: hexToken(4), endedAfterCursor: [hexToken(6)], counts: counts,
                                            status: .running, at: t0 + .seconds(5))),
        ]).get()
        let running = try #require(try reader.job(id: "j1"))
        #expect(running.status == .running && running.cursor == hexToken(4) && running.endedAfterCursor == [hexToken(6)])
        #expect(running.counts == counts && running.updatedAt == t0 + .seconds(5))
        #expect(try reader.jobSummary(id: "j1")?.counts == counts)
        #expect(try reader.jobs(status: .running, limit: 10).map(\.id) == ["j1"])
        #expect(try reader.retriesDue(jobID: "j1", at: t0 + .seconds(25), limit: 10).map(\.token) == [hexToken(2)])
        #expect(try reader.retriesDue(jobID: "j1", at: t0 + .seconds(30), limit: 10).map(\.token) == [hexToken(2), hexToken(3)],
                "earliest first, due at or before the time")

        // A progress without cursor or status keeps them; counts are replaced whole.
        let finished = PersonalJobCounts(targeted: 4, sent: 3, failed: ["BadDeviceToken": 1])
        try Self.write(store, [
            .clearTarget(jobID: "j1", token: hexToken(2)), .clearTarget(jobID: "j1", token: hexToken(3)),
            .advanceJob(PersonalJobProgress(jobID: "j1", cursor: nil, counts: finished, at: t0 + .seconds(40))),
        ]).get()
        #expect(try reader.job(id: "j1")?.cursor == hexToken(4))
        #expect(try reader.job(id: "j1")?.status == .running)
        #expect(try reader.retriesDue(jobID: "j1", at: t0 + .seconds(99), limit: 10).isEmpty)
        try Self.write(store, [.advanceJob(PersonalJobProgress(jobID: "j1", cursor: nil, counts: finished, status: .done, at: t0 + .seconds(41)))]).get()
        #expect(try reader.jobs(status: .running, limit: 10).isEmpty)
        #expect(try reader.jobSummary(id: "j1")?.status == .done && reader.jobSummary(id: "j1")?.counts == finished)
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func aFailingOperationRollsBackItsWholeList(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        try Self.write(store, [.createJob(job("j1"))]).get()
        let duplicate = Self.write(store, [
            .registerToken(TokenRecord(token: hexToken(1), kind: .pushToStart, registeredAt: t0)),
            .createJob(job("j2")),
            .createJob(job("j1")),
        ])
        let unknown = Self.write(store, [
            .deadLetter(DeadLetterRecord(jobID: "j1", token: hexToken(2), reason: "BadDeviceToken", at: t0)),
            .advanceJob(PersonalJobProgress(jobID: "nope", cursor: hexToken(9), counts: PersonalJobCounts(), at: t0)),
        ])
        #expect(duplicate.failure != nil && unknown.failure != nil)
        #expect(duplicate.failure?.isStorageFailure == false && unknown.failure?.isStorageFailure == false)
        let reader = try store.personalReader()
        defer { reader.close() }
        #expect(try reader.token(hexToken(1)) == nil && reader.job(id: "j2") == nil, "nothing before the duplicate stayed")
        #expect(try reader.deadLetters(status: nil, jobID: nil, reason: nil, after: 0, limit: 10).isEmpty)
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func deadLettersPageByIDAndAReplayTakesTheSelectionOnce(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        try Self.write(store, [.createJob(job("j1")), .createJob(job("j2"))]).get()
        let reasons = ["BadDeviceToken", "DeviceTokenNotForTopic", "TopicDisallowed"]
        for n in 0..<30 {
            try Self.write(store, [.deadLetter(DeadLetterRecord(jobID: n % 2 == 0 ? "j1" : "j2", token: hexToken(n), reason: reasons[n % 3],
                                                                at: t0 + .seconds(Int64(n))))]).get()
        }
        let reader = try store.personalReader()
        defer { reader.close() }
        var all: [DeadLetterRecord] = []
        while case let page = try reader.deadLetters(status: nil, jobID: nil, reason: nil, after: all.last?.id ?? 0, limit: 4), !page.isEmpty {
            all += page
        }
        #expect(all.map(\.token) == (0..<30).map(hexToken), "commit order, without gaps or repeats")
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.id < $1.id })
        #expect(try reader.deadLetters(status: nil, jobID: "j1", reason: "BadDeviceToken", after: 0, limit: 100).map(\.token)
                == [0, 6, 12, 18, 24].map(hexToken))
        #expect(try reader.deadLetters(ids: [all[5].id, all[0].id, 999_999]).map(\.id) == [all[0].id, all[5].id])

        // The same target dead-lettered again keeps its id and takes the new reason.
        try Self.write(store, [.deadLetter(DeadLetterRecord(jobID: "j1", token: hexToken(0), reason: "ExpiredToken", at: t0))]).get()
        #expect(try reader.deadLetters(ids: [all[0].id]).first?.reason == "ExpiredToken")

        let selection = DeadLetterSelection(jobID: "j2", reason: "TopicDisallowed", limit: 3)
        let selected = try reader.deadLetters(selectedBy: selection)
        #expect(selected.map(\.token) == [5, 11, 17].map(hexToken), "still dead, oldest first, up to the limit")
        try Self.write(store, [.markReplayed(ids: selected.map(\.id))]).get()
        #expect(try reader.deadLetters(selectedBy: selection).map(\.token) == [23, 29].map(hexToken))
        #expect(try reader.deadLetters(status: .replayed, jobID: nil, reason: nil, after: 0, limit: 100).map(\.id) == selected.map(\.id))
        let again = Self.write(store, [.createJob(job("j3")), .markReplayed(ids: [selected[0].id])])
        #expect(again.failure != nil, "a dead letter is replayed once")
        #expect(try reader.job(id: "j3") == nil)
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func anIdempotencyRecordHoldsItsKeyUntilItExpires(kind: PersonalStoreKind) async throws {
        let clock = ManualClock(t0)
        let store = try await kind.open(clock: clock)
        func record(_ key: String, at created: UnixTime, lifetime: Duration = .seconds(60), status: Int = 202) -> IdempotencyRecord {
            IdempotencyRecord(scope: "api-key-1", route: "POST /v1/personal", key: key, requestHash: Array(repeating: 7, count: 32),
                              status: status, response: Array(#"{"jobs":["j1"]}"#.utf8), createdAt: created, expiresAt: created + lifetime)
        }
        try Self.write(store, [.createJob(job("j1")), .rememberIdempotencyKey(record("k1", at: clock.now()))]).get()
        let reader = try store.personalReader()
        defer { reader.close() }
        clock.advance(by: .seconds(59))
        #expect(try reader.idempotencyRecord(scope: "api-key-1", route: "POST /v1/personal", key: "k1", at: clock.now()) != nil)
        #expect(try reader.idempotencyRecord(scope: "api-key-2", route: "POST /v1/personal", key: "k1", at: clock.now()) == nil, "scoped by API key")
        #expect(try reader.idempotencyRecord(scope: "api-key-1", route: "POST /v1/deadletters/replay", key: "k1", at: clock.now()) == nil)

        // Still held: the whole list fails, its job too.
        let held = Self.write(store, [.createJob(job("j2")), .rememberIdempotencyKey(record("k1", at: clock.now()))])
        #expect(held.failure != nil && held.failure?.isStorageFailure == false)
        #expect(try reader.job(id: "j2") == nil)

        clock.advance(by: .seconds(1))
        #expect(try reader.idempotencyRecord(scope: "api-key-1", route: "POST /v1/personal", key: "k1", at: clock.now()) == nil,
                "expired at its expiresAt")
        try Self.write(store, [.createJob(job("j2")), .rememberIdempotencyKey(record("k1", at: clock.now()))]).get()
        #expect(try reader.idempotencyRecord(scope: "api-key-1", route: "POST /v1/personal", key: "k1", at: clock.now())?.createdAt == clock.now())

        // The prune takes at most its limit, the earliest expired first, and nothing in force.
        for n in 0..<5 { try Self.write(store, [.rememberIdempotencyKey(record("old-\(n)", at: t0 + .seconds(Int64(n - 100))))]).get() }
        #expect(try reader.idempotencyRecordCount() == 6)
        try Self.write(store, [.pruneIdempotencyKeys(expiredBy: clock.now(), limit: 3)]).get()
        #expect(try reader.idempotencyRecordCount() == 3)
        try Self.write(store, [.pruneIdempotencyKeys(expiredBy: clock.now(), limit: 100)]).get()
        #expect(try reader.idempotencyRecordCount() == 1)
        #expect(try reader.idempotencyRecord(scope: "api-key-1", route: "POST /v1/personal", key: "k1", at: clock.now()) != nil)
    }
}
