import CSQLite
import TouchlineCore
import TouchlineRuntime
#if canImport(Glibc)
import Glibc
#endif

/// How a page of a follow's push-to-start targets is read
/// (``SQLiteTokenReader/pushToStartTokens(following:app:after:limit:environment:)``): the
/// follow's tokens from `token_follows`, one range of its key, then which of them are targets
/// (active push-to-start tokens of the app and environment) from `tokens`.
///
/// Joined row by row, each follower costs a seek from the root of the `tokens` tree: at a
/// million followers that was a tenth of a kickoff's personal loop (docs/benchmarks.md). Both
/// trees are in token order, so where the followers are most of the tokens between the page's
/// first and last (a big team's audience) the page walks `tokens` over that range beside the
/// followers, as a merge, one step a row. Where they are few (a small follow among many tokens)
/// that walk would mostly read other tokens: it is given up once fewer than half the rows it
/// read were followers, and the rest of the page is joined as before. Each statement reads the
/// rows as they are when it runs, as consecutive pages do.
struct FollowerPageRead {
    let connection: SQLiteConnection
    let follow: String
    let app: String
    let environment: TokenEnvironment?

    /// Rows the walk reads before it judges whether the followers are dense enough.
    static let walkProbe = 64
    /// Rows of `tokens` walked, and followers left to the join after a walk was given up: what
    /// the reads cost, for the tests.
    private(set) var rowsWalked = 0
    private(set) var followersJoinedFrom: [String] = []

    /// Up to `limit` targets after `cursor` (nil: from the start), in token order; fewer only at
    /// the end of the follow's tokens.
    mutating func targets(after cursor: String?, limit: Int) throws -> [TokenTarget] {
        var targets: [TokenTarget] = []
        var after = cursor ?? ""
        while targets.count < limit {
            let wanted = limit - targets.count
            let followers = try connection.query("SELECT token FROM token_follows WHERE follow = ?1 AND token > ?2 ORDER BY token LIMIT ?3",
                                                 [.text(follow), .text(after), .integer(Int64(wanted))]) { $0.text(at: 0) ?? "" }
            guard let last = followers.last else { break }
            try appendTargets(among: followers, to: &targets)
            after = last
            if followers.count < wanted { break }
        }
        return targets
    }

    /// The targets among `followers` (sorted, not empty), walked where they are dense, joined
    /// from where the walk was given up.
    private mutating func appendTargets(among followers: [String], to targets: inout [TokenTarget]) throws {
        let walk = try connection.statement("""
            SELECT token, kind = 'pushToStart' AND active = 1 AND (?3 IS NULL OR environment = ?3) AND app = ?4, environment
            FROM tokens WHERE token >= ?1 AND token <= ?2 ORDER BY token
            """)
        defer { walk.reset() }
        try walk.bind([.text(followers[0]), .text(followers[followers.count - 1]), environmentValue, .text(app)])
        var next = 0, read = 0, met = 0, givenUp = false
        while next < followers.count, try walk.step() {
            read += 1
            rowsWalked += 1
            var order = walk.withBlob(at: 0) { Self.compare(followers[next], $0) }
            // Followers before this row have no row of their own: not targets.
            while order < 0 {
                next += 1
                guard next < followers.count else { return }
                order = walk.withBlob(at: 0) { Self.compare(followers[next], $0) }
            }
            if order == 0 {
                met += 1
                if walk.int64(at: 1) == 1 { targets.append(TokenTarget(token: followers[next], environment: try Self.environment(walk, followers[next]))) }
                next += 1
            }
            if read >= Self.walkProbe, met * 2 < read {
                givenUp = true
                break
            }
        }
        // Walked to the range's end, the followers left have no row: none is a target.
        guard givenUp, next < followers.count else { return }
        walk.reset()
        followersJoinedFrom.append(followers[next])
        targets += try joined(from: followers[next], through: followers[followers.count - 1])
    }

    /// The targets among the follow's tokens from `first` through `last`, a seek each.
    private func joined(from first: String, through last: String) throws -> [TokenTarget] {
        try connection.query("""
            SELECT t.token, t.environment FROM token_follows f JOIN tokens t ON t.token = f.token
            WHERE f.follow = ?1 AND f.token >= ?2 AND f.token <= ?3 AND t.kind = 'pushToStart' AND t.active = 1
                AND (?4 IS NULL OR t.environment = ?4) AND t.app = ?5
            ORDER BY f.token
            """, [.text(follow), .text(first), .text(last), environmentValue, .text(app)]) { row in
            let token = row.text(at: 0) ?? ""
            return TokenTarget(token: token, environment: try Self.environment(row, token, column: 1))
        }
    }

    private var environmentValue: SQLiteValue { environment.map { .text($0.rawValue) } ?? .null }

    private static func environment(_ row: SQLiteStatement, _ token: String, column: Int32 = 2) throws -> TokenEnvironment {
        guard let environment = row.text(at: column).flatMap(TokenEnvironment.init(rawValue:)) else {
            throw SQLiteError(code: SQLITE_CORRUPT, message: "token \(TokenRows.redacted(token)) has an unreadable environment", statement: nil)
        }
        return environment
    }

    /// `token` against a row's token bytes in SQLite's order for text (bytes, then length):
    /// negative when the token comes first.
    static func compare(_ token: String, _ row: UnsafeRawBufferPointer) -> Int {
        var token = token
        return token.withUTF8 { bytes in
            let common = min(bytes.count, row.count)
            if common > 0, let base = bytes.baseAddress, let rowBase = row.baseAddress {
                let order = memcmp(base, rowBase, common)
                if order != 0 { return Int(order) }
            }
            return bytes.count - row.count
        }
    }
}
