import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime
@testable import TouchlineStore

/// A follow's pages of targets, walked beside `tokens` where its followers are dense and joined
/// where they are sparse (``FollowerPageRead``), against the targets worked out from the
/// registrations themselves.
@Suite struct FollowerPageReadTests {
    /// What one registration was, to work the targets out without the store.
    struct Registered {
        var token: String
        var follows: Bool
        var kind: TokenKind
        var app: String
        var environment: TokenEnvironment
        var active: Bool
    }

    /// 3,000 tokens in three runs: the follow's tokens nearly all of the first (the walk), a
    /// tenth of the second (the walk given up, the join), three fifths of the third; every run
    /// mixes in update tokens, another app, both environments and deactivated tokens.
    static func registry(in dir: TemporaryDirectory) async throws -> (path: String, registered: [Registered]) {
        var random = SplitMix64(seed: 34)
        var registered: [Registered] = []
        for n in 0..<3_000 {
            let share = n < 1_000 ? 95 : n < 2_000 ? 10 : 60
            registered.append(Registered(token: hexToken(n * 7 + 3).lowercased(), follows: random.percent(share),
                                         kind: random.percent(88) ? .pushToStart : .update, app: random.percent(90) ? "default" : "tv",
                                         environment: random.percent(80) ? .production : .sandbox, active: !random.percent(5)))
        }
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        for part in stride(from: 0, to: registered.count, by: 500) {
            var operations: [TokenOperation] = []
            for entry in registered[part..<min(part + 500, registered.count)] {
                operations.append(.registerToken(TokenRecord(token: entry.token, kind: entry.kind,
                                                             channelID: entry.kind == .update ? "m1" : nil,
                                                             follows: entry.follows ? ["team:ARS"] : ["team:CHE"],
                                                             environment: entry.environment, registeredAt: t0, app: entry.app)))
                if !entry.active { operations.append(.deactivateToken(entry.token, unlessRegisteredAfter: t0, at: t0)) }
            }
            try await writer.submit(operations)
        }
        return (writer.path, registered)
    }

    @Test func pagesHoldExactlyTheTargetsInOrderWhateverTheFollowersDensity() async throws {
        let dir = TemporaryDirectory()
        let (path, registered) = try await Self.registry(in: dir)
        let connection = try SQLiteConnection(path: path)
        defer { connection.close() }
        for (app, environment) in [("default", nil), ("default", TokenEnvironment.sandbox), ("tv", TokenEnvironment.production)] {
            let expected = registered.filter {
                $0.follows && $0.kind == .pushToStart && $0.active && $0.app == app && (environment == nil || $0.environment == environment)
            }
            for limit in [1, 7, 100, 1_000, 5_000] {
                var read = FollowerPageRead(connection: connection, follow: "team:ARS", app: app, environment: environment)
                var seen: [TokenTarget] = []
                while case let page = try read.targets(after: seen.last?.token, limit: limit), !page.isEmpty {
                    // Full pages until the last: a short page is read as the end.
                    #expect(page.count == limit || seen.count + page.count == expected.count, "limit \(limit): a page of \(page.count)")
                    seen += page
                }
                #expect(seen.map(\.token) == expected.map(\.token), "\(app), \(String(describing: environment)), limit \(limit)")
                #expect(seen.map(\.environment) == expected.map(\.environment))
            }
        }
    }

    @Test func theWalkIsGivenUpWhereFollowersAreSparseAndKeptWhereTheyAreDense() async throws {
        let dir = TemporaryDirectory()
        let (path, registered) = try await Self.registry(in: dir)
        let connection = try SQLiteConnection(path: path)
        defer { connection.close() }

        // Dense: the first run's followers are walked, no row past the page's last, nothing joined.
        var dense = FollowerPageRead(connection: connection, follow: "team:ARS", app: "default", environment: nil)
        let page = try dense.targets(after: nil, limit: 500)
        let rowsToLast = try #require(registered.firstIndex { $0.token == page.last?.token }) + 1
        #expect(dense.followersJoinedFrom.isEmpty)
        #expect(dense.rowsWalked > 0 && dense.rowsWalked <= rowsToLast, "\(dense.rowsWalked) rows walked, \(rowsToLast) up to the page's last")

        // Sparse: from the second run on, the walk is given up within its probe's rows and the
        // rest joined; far fewer rows walked than the page spans.
        var sparse = FollowerPageRead(connection: connection, follow: "team:ARS", app: "default", environment: nil)
        let sparsePage = try sparse.targets(after: registered[999].token, limit: 50)
        // The walk starts at the first follower's row and reads a probe's rows: the join takes
        // over at the first follower after them.
        let firstFollower = registered[1_000...].firstIndex { $0.follows } ?? 0
        let firstAfterProbe = registered[(firstFollower + FollowerPageRead.walkProbe)...].first { $0.follows }?.token
        #expect(firstFollower >= 1_000 && sparse.followersJoinedFrom.first == firstAfterProbe, "\(sparse.followersJoinedFrom)")
        let rowsSpanned = try #require(registered.firstIndex { $0.token == sparsePage.last?.token }) - 999
        #expect(sparse.rowsWalked * 2 < rowsSpanned, "\(sparse.rowsWalked) rows walked of the \(rowsSpanned) the page spans")
    }

    @Test func tokensCompareInSQLitesOrderForText() {
        for (token, row, sign) in [("ab", "ab", 0), ("ab", "abc", -1), ("abc", "ab", 1), ("aa", "ab", -1), ("b", "abc", 1), ("", "a", -1)] {
            let order = Array(row.utf8).withUnsafeBytes { FollowerPageRead.compare(token, $0) }
            #expect(order.signum() == sign, "\(token) against \(row)")
        }
    }
}

extension SplitMix64 {
    /// True `share` times in a hundred.
    mutating func percent(_ share: Int) -> Bool { Int(next() % 100) < share }
}
