import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

func personalJob(_ id: String) -> PersonalJobRecord {
    PersonalJobRecord(id: id, createdAt: t0, audience: #"{"follows":"team:ARS"}"#,
                      payload: Array(#"{"aps":{"event":"start","timestamp":1767225600}}"#.utf8), priority: 10,
                      expiration: t0 + .seconds(3_600))
}

@Suite struct PersonalJobTests {
    /// A fan-out half done when the store closes resumes after its cursor with the same counts,
    /// retry rows and dead letters: they were all written in the same batches.
    @Test func aJobResumesAfterReopenWithItsCursorAndCounters() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let failedOnce = PersonalJobCounts(targeted: 500, sent: 480, failed: ["BadDeviceToken": 1, "Unregistered": 3], expired: 0, pending: 16)
        do {
            let writer = try StoreWriter(path: path)
            defer { writer.close() }
            try await writer.submit([.createJob(personalJob("j1"))])
            try await writer.submit([
                .advanceJob(PersonalJobProgress(jobID: "j1", cursor: "00ff", counts: PersonalJobCounts(targeted: 250, sent: 250),
                                                status: .running, at: t0 + .seconds(1))),
            ])
            try await writer.submit([
                .advanceJob(PersonalJobProgress(jobID: "j1", cursor: "01ff", counts: failedOnce, at: t0 + .seconds(2))),
                .scheduleRetry(PersonalJobRetry(jobID: "j1", token: "0150", attempts: 1, retryAt: t0 + .seconds(3))),
                .scheduleRetry(PersonalJobRetry(jobID: "j1", token: "0160", attempts: 2, retryAt: t0 + .seconds(9))),
                .deadLetter(DeadLetterRecord(jobID: "j1", token: "0170", reason: "BadDeviceToken", at: t0 + .seconds(2))),
                .deactivateToken("0180", unlessRegisteredAfter: t0, at: t0 + .seconds(2)),
            ])
        }
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        let job = try #require(try reader.job(id: "j1"))
        #expect(job.cursor == "01ff")
        #expect(job.counts == failedOnce)
        #expect(job.status == .running)
        let progress = try #require(try reader.jobSummary(id: "j1"))
        #expect(progress.status == .running && progress.counts == failedOnce)
        #expect(try reader.jobSummary(id: "missing") == nil)
        #expect(job.payload == personalJob("j1").payload && job.expiration == t0 + .seconds(3_600))
        #expect(try reader.jobs(status: .running, limit: 10).map(\.id) == ["j1"])
        #expect(try reader.retriesDue(jobID: "j1", at: t0 + .seconds(5), limit: 10)
                == [PersonalJobRetry(jobID: "j1", token: "0150", attempts: 1, retryAt: t0 + .seconds(3))])
        #expect(try reader.retriesDue(jobID: "j1", at: t0 + .seconds(9), limit: 10).map(\.token) == ["0150", "0160"])

        let finished = PersonalJobCounts(targeted: 500, sent: 496, failed: ["BadDeviceToken": 1, "Unregistered": 3])
        try await writer.submit([
            .clearTarget(jobID: "j1", token: "0150"),
            .clearTarget(jobID: "j1", token: "0160"),
            .advanceJob(PersonalJobProgress(jobID: "j1", cursor: nil, counts: finished, status: .done, at: t0 + .seconds(10))),
        ])
        let done = try #require(try reader.job(id: "j1"))
        #expect(done.status == .done && done.cursor == "01ff" && done.counts == finished)
        #expect(try reader.retriesDue(jobID: "j1", at: t0 + .seconds(60), limit: 10).isEmpty)
    }

    /// The tokens that ended after the cursor survive a save whole, in order, also when there are
    /// none; a row written by schema 3 (a JSON array) still reads.
    @Test func tokensEndedAfterTheCursorRoundTrip() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.createJob(personalJob("j1")), .createJob(personalJob("j2"))])
        let ended = (1...1_000).map { String(format: "%064x", $0 * 7) }
        try await writer.submit([
            .advanceJob(PersonalJobProgress(jobID: "j1", cursor: "00ff", endedAfterCursor: ended, counts: PersonalJobCounts(), at: t0)),
            .advanceJob(PersonalJobProgress(jobID: "j2", cursor: "00ff", endedAfterCursor: [], counts: PersonalJobCounts(), at: t0)),
        ])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.job(id: "j1")?.endedAfterCursor == ended)
        #expect(try reader.job(id: "j2")?.endedAfterCursor == [])

        let legacy = try SQLiteConnection(path: writer.path)
        try legacy.execute(#"UPDATE personal_jobs SET ended_after_cursor = '["0a","0b"]' WHERE id = 'j2'"#)
        legacy.close()
        #expect(try reader.job(id: "j2")?.endedAfterCursor == ["0a", "0b"])
    }

    @Test func progressForAnUnknownJobFailsTheWholeBatch() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.createJob(personalJob("j1"))])
        let result = writer.submitAndWait([
            .deadLetter(DeadLetterRecord(jobID: "j1", token: "01", reason: "BadDeviceToken", at: t0)),
            .advanceJob(PersonalJobProgress(jobID: "nope", cursor: "01", counts: PersonalJobCounts(), at: t0)),
        ])
        guard case .failure(let error) = result else {
            Issue.record("progress for a missing job should fail")
            return
        }
        #expect(error.description.contains("unknown personal job \"nope\""))
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.deadLetters(after: 0, limit: 10).isEmpty, "the dead letter rolled back with its batch")
    }

    @Test func aDuplicateJobIDIsRefused() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.createJob(personalJob("j1"))])
        guard case .failure(.database(let error)) = writer.submitAndWait([.createJob(personalJob("j1"))]) else {
            Issue.record("a second job with the same id should fail")
            return
        }
        #expect(error.isConstraintViolation)
    }

    @Test func deadLettersPageAndReplaySelectsOnlyWhatMatches() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.createJob(personalJob("j1")), .createJob(personalJob("j2"))])
        let reasons = ["BadDeviceToken", "DeviceTokenNotForTopic"]
        try await writer.submit((0..<25).map { n in
            .deadLetter(DeadLetterRecord(jobID: n < 15 ? "j1" : "j2", token: String(format: "%04x", n), reason: reasons[n % 2],
                                         at: t0 + .seconds(Int64(n))))
        })
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }

        var paged: [DeadLetterRecord] = []
        var after: Int64 = 0
        while true {
            let page = try reader.deadLetters(after: after, limit: 10)
            guard let last = page.last else { break }
            paged += page
            after = last.id
        }
        #expect(paged.map(\.token) == (0..<25).map { String(format: "%04x", $0) })
        #expect(paged.allSatisfy { $0.status == .dead })

        let selected = try reader.deadLetters(selectedBy: DeadLetterSelection(jobID: "j1", reason: "BadDeviceToken", limit: 5))
        #expect(selected.map(\.token) == ["0000", "0002", "0004", "0006", "0008"])
        try await writer.submit([.markReplayed(ids: selected.map(\.id))])

        let next = try reader.deadLetters(selectedBy: DeadLetterSelection(jobID: "j1", reason: "BadDeviceToken", limit: 5))
        #expect(next.map(\.token) == ["000a", "000c", "000e"])
        #expect(try reader.deadLetters(selectedBy: DeadLetterSelection(reason: "DeviceTokenNotForTopic", limit: 100)).count == 12)
        #expect(try reader.deadLetters(selectedBy: DeadLetterSelection(jobID: "j2", limit: 100)).count == 10)
        #expect(try reader.deadLetters(status: .replayed, after: 0, limit: 100).map(\.token) == selected.map(\.token))
        #expect(try reader.deadLetters(status: .dead, after: 0, limit: 100).count == 20)
    }

    /// A replay that names a letter already replayed fails whole: its new job is not created.
    @Test func replayingALetterTwiceFailsTheWholeBatch() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.createJob(personalJob("j1")),
                                 .deadLetter(DeadLetterRecord(jobID: "j1", token: "00aa", reason: "BadDeviceToken", at: t0))])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        let letter = try #require(try reader.deadLetters(after: 0, limit: 1).first)
        try await writer.submit([.createJob(personalJob("replay-1")), .markReplayed(ids: [letter.id])])
        await #expect(throws: StoreError.self) {
            try await writer.submit([.createJob(personalJob("replay-2")), .markReplayed(ids: [letter.id])])
        }
        #expect(try reader.job(id: "replay-1") != nil)
        #expect(try reader.job(id: "replay-2") == nil)
    }

    /// A database written by the previous version (channels only) gains the new tables on open
    /// and keeps its channels.
    @Test func aVersionOneDatabaseIsMigrated() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        do {
            let writer = try StoreWriter(path: path)
            _ = try await writer.createChannel(channel("m1"))
            writer.close()
        }
        let old = try SQLiteConnection(path: path)
        try old.execute("""
            DROP TABLE dead_letters; DROP TABLE personal_targets; DROP TABLE personal_jobs; DROP TABLE token_follows;
            DROP TABLE tokens; PRAGMA user_version = 1
            """)
        old.close()

        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit([.registerToken(TokenRecord(token: "01", kind: .pushToStart, registeredAt: t0))])
        let version = try SQLiteConnection(path: path).query("PRAGMA user_version") { $0.int64(at: 0) }
        #expect(version == [14], "migrated to the newest schema (14: the starts recorded a run a save)")
        #expect(try SQLiteChannelReader(path: path).channel(id: "m1") != nil)
        #expect(try SQLiteTokenReader(path: path).token("01") != nil)
    }
}

extension StoreWriter {
    /// Submits token operations from the calling thread and blocks until they are durable.
    func submitAndWait(_ operations: [TokenOperation]) -> Result<Void, StoreError> {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        submit(operations) { outcome in
            result.set(outcome)
            done.signal()
        }
        done.wait()
        return result.get()
    }
}

/// Version 11 adds the record of the devices started into each APNs channel.
@Suite struct GenerationStartsMigrationTests {
    /// A version-10 personal file gains the table on open, keeps its jobs, and records starts.
    @Test func aVersionTenFileGainsTheStartsOfEachGeneration() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("personal.sqlite")
        do {
            let writer = try StoreWriter(path: path)
            try await writer.submit([.createJob(personalJob("job-1"))])
            writer.close()
        }
        let old = try SQLiteConnection(path: path)
        try old.execute("DROP TABLE generation_starts; PRAGMA user_version = 10")
        old.close()

        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit([.recordStarts(channel: "gen-1", tokens: ["ab01"])])
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        #expect(try SQLiteConnection(path: path).query("PRAGMA user_version") { $0.int64(at: 0) } == [14])
        #expect(try reader.job(id: "job-1") != nil)
        #expect(try reader.startedTokens(among: ["ab01", "ab02"], into: "gen-1") == ["ab01"])
    }
}
