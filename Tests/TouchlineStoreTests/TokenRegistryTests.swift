import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A 64-digit hex token derived from `n`, in upper case to check that the store lowercases it.
func hexToken(_ n: Int) -> String { String(format: "%064X", n) }

@Suite struct TokenRegistryTests {
    @Test func aTokenIsStoredLowercaseWithItsFollows() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.registerToken(TokenRecord(token: "ABCDEF01", kind: .pushToStart, userID: "u1",
                                                            follows: ["team:ARS", "channel:m1"], environment: .sandbox, registeredAt: t0))])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        let stored = try #require(try reader.token("abcdef01"))
        #expect(stored == TokenRecord(token: "abcdef01", kind: .pushToStart, userID: "u1", follows: ["channel:m1", "team:ARS"],
                                      environment: .sandbox, registeredAt: t0))
        #expect(try reader.token("ABCDEF01") == stored)
    }

    /// A version-8 registry (before apps) gains `tokens.app` on open: its tokens are the
    /// `default` app's, and tokens of another app can be stored beside them.
    @Test func aVersionEightRegistryKeepsItsTokensAsTheDefaultApps() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("personal.sqlite")
        do {
            let writer = try StoreWriter(path: path)
            try await writer.submit([.registerToken(TokenRecord(token: "ab01", kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0))])
            writer.close()
        }
        let old = try SQLiteConnection(path: path)
        try old.execute("ALTER TABLE tokens DROP COLUMN app; ALTER TABLE personal_jobs DROP COLUMN app; PRAGMA user_version = 8")
        old.close()

        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit([.registerToken(TokenRecord(token: "ab02", kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0, app: "tv"))])
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        #expect(try reader.token("ab01")?.app == "default")
        #expect(try reader.pushToStartTokens(following: "team:ARS", app: "default", after: nil, limit: 10).map(\.token) == ["ab01"])
        #expect(try reader.pushToStartTokens(following: "team:ARS", app: "tv", after: nil, limit: 10).map(\.token) == ["ab02"])
    }

    @Test func aNewUpdateTokenForTheSameActivityReplacesTheOldOneOnly() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([
            .registerToken(TokenRecord(token: "aa01", kind: .update, channelID: "m1", userID: "u1", registeredAt: t0)),
            .registerToken(TokenRecord(token: "aa02", kind: .update, channelID: "m2", userID: "u1", registeredAt: t0)),
            .registerToken(TokenRecord(token: "aa03", kind: .update, channelID: "m1", userID: "u2", registeredAt: t0)),
        ])
        try await writer.submit([.registerToken(TokenRecord(token: "aa11", kind: .update, channelID: "m1", userID: "u1",
                                                            registeredAt: t0 + .seconds(60)))])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        let old = try #require(try reader.token("aa01"))
        #expect(!old.active)
        #expect(old.deactivatedAt == t0 + .seconds(60))
        #expect(try reader.token("aa11")?.active == true)
        #expect(try reader.token("aa02")?.active == true, "another match's activity of the same user stays")
        #expect(try reader.token("aa03")?.active == true, "another user's activity of the same match stays")
        #expect(try reader.tokens(userID: "u1").map(\.token) == ["aa11", "aa01", "aa02"])
    }

    @Test func aNewPushToStartTokenReplacesTheUsersOldOneAndLeavesUpdateTokens() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([
            .registerToken(TokenRecord(token: "bb01", kind: .pushToStart, userID: "u1", follows: ["team:ARS"], registeredAt: t0)),
            .registerToken(TokenRecord(token: "bb02", kind: .update, channelID: "m1", userID: "u1", registeredAt: t0)),
            .registerToken(TokenRecord(token: "bb03", kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0)),
        ])
        try await writer.submit([.registerToken(TokenRecord(token: "bb11", kind: .pushToStart, userID: "u1", follows: ["team:ARS"],
                                                            registeredAt: t0 + .seconds(5)))])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.token("bb01")?.active == false)
        #expect(try reader.token("bb02")?.active == true)
        #expect(try reader.token("bb03")?.active == true, "a token without a user replaces nothing")
        #expect(try reader.pushToStartTokens(following: "team:ARS", after: nil, limit: 10).map(\.token) == ["bb03", "bb11"])
    }

    @Test func reRegisteringReactivatesAndReplacesFollows() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.registerToken(TokenRecord(token: "cc01", kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0))])
        try await writer.submit([.deactivateToken("cc01", unlessRegisteredAfter: t0 + .seconds(1), at: t0 + .seconds(2))])
        try await writer.submit([.registerToken(TokenRecord(token: "cc01", kind: .pushToStart, follows: ["team:CHE"],
                                                            registeredAt: t0 + .seconds(3)))])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        let stored = try #require(try reader.token("cc01"))
        #expect(stored.active && stored.deactivatedAt == nil && stored.registeredAt == t0 + .seconds(3))
        #expect(stored.follows == ["team:CHE"])
        #expect(try reader.pushToStartTokens(following: "team:ARS", after: nil, limit: 10).isEmpty)
    }

    /// 410 `Unregistered` carries the moment APNs learned the token was invalid: a registration
    /// after that moment is newer than the failure and must survive it.
    @Test func unregisteredDeactivatesOnlyTokensRegisteredBeforeAPNsTimestamp() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([
            .registerToken(TokenRecord(token: "dd01", kind: .pushToStart, registeredAt: t0)),
            .registerToken(TokenRecord(token: "dd02", kind: .pushToStart, registeredAt: t0 + .seconds(100))),
            .registerToken(TokenRecord(token: "dd03", kind: .pushToStart, registeredAt: t0 + .seconds(50))),
        ])
        let apnsTimestamp = t0 + .seconds(50)
        try await writer.submit([
            .deactivateToken("DD01", unlessRegisteredAfter: apnsTimestamp, at: t0 + .seconds(200)),
            .deactivateToken("dd02", unlessRegisteredAfter: apnsTimestamp, at: t0 + .seconds(200)),
            .deactivateToken("dd03", unlessRegisteredAfter: apnsTimestamp, at: t0 + .seconds(200)),
        ])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.token("dd01")?.deactivatedAt == t0 + .seconds(200))
        #expect(try reader.token("dd02")?.active == true, "registered again after APNs' timestamp")
        #expect(try reader.token("dd03")?.active == false, "registered exactly at the timestamp is not after it")
    }

    /// The commit reports the tokens it really deactivated, which is what the gateway's
    /// `touchline_tokens_deactivated_total` counts: not the 410s.
    @Test func aSummarizedCommitCountsOnlyTokensReallyDeactivated() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([
            .registerToken(TokenRecord(token: "ee01", kind: .pushToStart, registeredAt: t0)),
            .registerToken(TokenRecord(token: "ee02", kind: .pushToStart, registeredAt: t0 + .seconds(100))),
            .registerToken(TokenRecord(token: "ee03", kind: .pushToStart, registeredAt: t0)),
        ])
        func commit(_ operations: [TokenOperation]) async throws -> TokenWriteSummary {
            try await withCheckedThrowingContinuation { continuation in
                writer.submit(summarizing: operations) { continuation.resume(with: $0) }
            }
        }
        let apnsTimestamp = t0 + .seconds(50)
        let first = try await commit([
            .deactivateToken("EE01", unlessRegisteredAfter: apnsTimestamp, at: t0 + .seconds(200)),
            .deactivateToken("ee01", unlessRegisteredAfter: apnsTimestamp, at: t0 + .seconds(200)),  // a second 410
            .deactivateToken("ee02", unlessRegisteredAfter: apnsTimestamp, at: t0 + .seconds(200)),  // registered again
            .deactivateToken("ee99", unlessRegisteredAfter: apnsTimestamp, at: t0 + .seconds(200)),  // not registered
        ])
        #expect(first == TokenWriteSummary(tokensDeactivated: 1))
        let second = try await commit([
            .deactivateToken("ee01", unlessRegisteredAfter: t0 + .seconds(300), at: t0 + .seconds(300)),  // already inactive
            .deactivateToken("ee03", unlessRegisteredAfter: t0 + .seconds(300), at: t0 + .seconds(300)),
        ])
        #expect(second == TokenWriteSummary(tokensDeactivated: 1))
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.token("ee01")?.deactivatedAt == t0 + .seconds(200), "deactivated once, by the first 410")
        #expect(try reader.token("ee02")?.active == true)
    }

    @Test func deleteRemovesTheTokenAndItsFollows() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.registerToken(TokenRecord(token: "ee01", kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0))])
        try await writer.submit([.deleteToken("EE01")])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.token("ee01") == nil)
        let follows = try SQLiteConnection(path: writer.path).query("SELECT count(*) FROM token_follows") { $0.int64(at: 0) }
        #expect(follows == [0])
    }

    /// 20,000 followers (plus inactive, update and other-team tokens that must be skipped) read
    /// in pages of 777: every follower exactly once, in order, and nothing else.
    @Test(.heavy) func theFollowsScanVisitsEveryActivePushToStartTokenOnce() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let followers = 20_000
        for chunk in stride(from: 0, to: followers, by: 1_000) {
            try await writer.submit((chunk..<chunk + 1_000).map {
                .registerToken(TokenRecord(token: hexToken($0), kind: .pushToStart, follows: ["team:ARS", "league:EPL"],
                                           environment: $0 % 10 == 0 ? .sandbox : .production, registeredAt: t0))
            })
        }
        try await writer.submit([
            .registerToken(TokenRecord(token: hexToken(1_000_001), kind: .pushToStart, follows: ["team:CHE"], registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(1_000_002), kind: .update, channelID: "m1", follows: ["team:ARS"], registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(1_000_003), kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0)),
            .deactivateToken(hexToken(1_000_003), unlessRegisteredAfter: t0, at: t0),
        ])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        var visited: [TokenTarget] = []
        var cursor: String?
        var pages = 0
        while true {
            let page = try reader.pushToStartTokens(following: "team:ARS", after: cursor, limit: 777)
            guard let last = page.last else { break }
            #expect(page.count <= 777)
            visited += page
            cursor = last.token
            pages += 1
        }
        #expect(pages == (followers + 776) / 777)
        #expect(visited.map(\.token) == (0..<followers).map { hexToken($0).lowercased() })
        #expect(visited.count(where: { $0.environment == .sandbox }) == followers / 10)

        // One environment only: pages stay full and contiguous over that environment's tokens.
        var sandbox: [TokenTarget] = []
        cursor = nil
        while true {
            let page = try reader.pushToStartTokens(following: "team:ARS", after: cursor, limit: 333, environment: .sandbox)
            guard let last = page.last else { break }
            sandbox += page
            cursor = last.token
        }
        #expect(sandbox.map(\.token) == visited.filter { $0.environment == .sandbox }.map(\.token))
        let firstProduction = try #require(visited.first { $0.environment == .production }?.token)
        let firstSandbox = try #require(sandbox.first?.token)
        #expect(try reader.activeTokens(among: [firstProduction, firstSandbox], environment: .sandbox) == [firstSandbox])
        #expect(try reader.activeTokens(among: [firstProduction, firstSandbox]).count == 2)
    }
}
