import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `idempotency_keys` (schema version 5): a record commits with the jobs of its list, is found
/// until it expires, is never taken over while it holds, and is pruned a bounded number at a time.
@Suite struct IdempotencyRecordTests {
    static func record(_ key: String, scope: String = "scope-a", hash: UInt8 = 1, job: String = "job-1",
                       at created: UnixTime = t0, lifetime: Duration = .seconds(60)) -> IdempotencyRecord {
        IdempotencyRecord(scope: scope, route: "POST /v1/personal", key: key, requestHash: [UInt8](repeating: hash, count: 32),
                          status: 202, response: Array(#"{"jobId":"\#(job)"}"#.utf8), createdAt: created, expiresAt: created + lifetime)
    }

    @Test func aRecordIsFoundUntilItExpiresAndScopedByKeyRouteAndAPIKey() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("personal.sqlite"))
        defer { writer.close() }
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        let stored = Self.record("k1")
        try await writer.submit([.createJob(personalJob("job-1")), .rememberIdempotencyKey(stored)])

        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "k1", at: t0) == stored)
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "k1", at: t0 + .seconds(59)) == stored)
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "k1", at: t0 + .seconds(60)) == nil,
                "expired at expiresAt")
        #expect(try reader.idempotencyRecord(scope: "scope-b", route: "POST /v1/personal", key: "k1", at: t0) == nil, "another API key")
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/deadletters/replay", key: "k1", at: t0) == nil,
                "another route")
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "K1", at: t0) == nil, "keys are case-sensitive")
    }

    @Test func aKeyStillHeldFailsItsWholeListAndAnExpiredOneIsTakenOver() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("personal.sqlite"))
        defer { writer.close() }
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        try await writer.submit([.createJob(personalJob("job-1")), .rememberIdempotencyKey(Self.record("k1"))])

        // Still held 30 s later: the list fails, its job is not created.
        let early = Self.record("k1", hash: 2, job: "job-2", at: t0 + .seconds(30))
        await #expect(throws: StoreError.self) {
            try await writer.submit([.createJob(personalJob("job-2")), .rememberIdempotencyKey(early)])
        }
        #expect(try reader.job(id: "job-2") == nil)
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "k1", at: t0 + .seconds(30))?.response
                == Array(#"{"jobId":"job-1"}"#.utf8))

        // Expired: a new request takes the key over.
        let later = Self.record("k1", hash: 3, job: "job-3", at: t0 + .seconds(60))
        try await writer.submit([.createJob(personalJob("job-3")), .rememberIdempotencyKey(later)])
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "k1", at: t0 + .seconds(61)) == later)
        #expect(try reader.idempotencyRecordCount() == 1)
    }

    @Test func pruningDeletesAtMostItsLimitOfExpiredRecordsOldestFirst() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("personal.sqlite"))
        defer { writer.close() }
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        // Ten records expiring at t0+1 s ... t0+10 s, and one that lives on.
        try await writer.submit((1...10).map { .rememberIdempotencyKey(Self.record("k\($0)", lifetime: .seconds(Int64($0)))) }
                                + [.rememberIdempotencyKey(Self.record("live", lifetime: .seconds(3_600)))])
        try await writer.submit([.pruneIdempotencyKeys(expiredBy: t0 + .seconds(20), limit: 4)])
        #expect(try reader.idempotencyRecordCount() == 7)
        let remaining = (1...10).filter { (try? reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "k\($0)", at: t0)) != nil }
        #expect(remaining == Array(5...10), "the four that expired first went")
        try await writer.submit([.pruneIdempotencyKeys(expiredBy: t0 + .seconds(7), limit: 100)])
        #expect(try reader.idempotencyRecordCount() == 4, "only those expired by then: k8, k9, k10 and the live one stay")
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "live", at: t0 + .seconds(7)) != nil)
    }

    /// A database of version 4 gains the table on open; its jobs stay.
    @Test func aVersionFourDatabaseGainsTheTable() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("personal.sqlite")
        do {
            let writer = try StoreWriter(path: path)
            try await writer.submit([.createJob(personalJob("job-1"))])
            writer.close()
        }
        let old = try SQLiteConnection(path: path)
        // What version 4 had: no idempotency table, no job start time (version 8), no token or job app (versions 9 and 10).
        try old.execute("DROP TABLE idempotency_keys; ALTER TABLE personal_jobs DROP COLUMN start_at; ALTER TABLE tokens DROP COLUMN app; ALTER TABLE personal_jobs DROP COLUMN app; PRAGMA user_version = 4")
        old.close()

        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit([.rememberIdempotencyKey(Self.record("k1"))])
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        #expect(try reader.idempotencyRecord(scope: "scope-a", route: "POST /v1/personal", key: "k1", at: t0) == Self.record("k1"))
        #expect(try reader.job(id: "job-1") != nil && reader.job(id: "job-1")?.startAt == nil)
    }
}
