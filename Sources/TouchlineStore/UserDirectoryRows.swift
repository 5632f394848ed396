import CSQLite
import TouchlineCore
import TouchlineRuntime

/// The user directory of a partitioned registry's partition: the registrations of the users
/// placed in it, and the replacements of their tokens it decided (docs/cluster.md, "The
/// partitioned token registry").
///
/// The whole registry's rule, that a registration deactivates the user's other tokens of its
/// group (``UserTokenNote/group``) still registered as such, joins tokens of every partition;
/// here it is decided where the user's registrations are listed, and applied by
/// ``TokenOperation/supersedeToken(_:registeredBefore:)`` in each replaced token's partition,
/// which checks that the token is still registered as it was noted and not registered again
/// since. Notes may come in any order (two gateways log them): a note replaces the group's
/// earlier registrations, and is itself replaced by a later one noted before it. Each row keeps
/// a token's newest registration in one group of one user.
enum UserDirectoryRows {
    static func note(_ note: UserTokenNote, on db: SQLiteConnection) throws {
        let group = SQLiteValue.text(note.group)
        try db.run("""
            INSERT INTO user_tokens (user_id, grouping, token, app, registered_at, superseded_at) VALUES (?, ?, ?, ?, ?, NULL)
            ON CONFLICT (user_id, grouping, token) DO UPDATE SET app = excluded.app, registered_at = excluded.registered_at, superseded_at = NULL
            WHERE excluded.registered_at > user_tokens.registered_at
            """, [.text(note.userID), group, .text(note.token), .text(note.app), .integer(note.registeredAt.nanoseconds)])
        let rows = try db.query("SELECT token, registered_at, superseded_at FROM user_tokens WHERE user_id = ? AND grouping = ?",
                                [.text(note.userID), group]) { row in
            (token: row.text(at: 0) ?? "", registeredAt: row.int64(at: 1), supersededAt: row.optionalInt64(at: 2))
        }
        guard let noted = rows.first(where: { $0.token == note.token }) else { return }
        // The group's earlier registrations, replaced by this one.
        for earlier in rows where earlier.token != note.token && earlier.registeredAt < noted.registeredAt && earlier.supersededAt == nil {
            try supersede(earlier.token, of: note, registeredBefore: noted.registeredAt, on: db)
        }
        // This one, if a later registration of the group was noted before it.
        if noted.supersededAt == nil,
           let later = rows.filter({ $0.token != note.token && $0.registeredAt > noted.registeredAt }).map(\.registeredAt).min() {
            try supersede(note.token, of: note, registeredBefore: later, on: db)
        }
    }

    /// Marks `token`'s registration in `note`'s group replaced and queues the replacement for the token's partition.
    private static func supersede(_ token: String, of note: UserTokenNote, registeredBefore: Int64, on db: SQLiteConnection) throws {
        try db.run("UPDATE user_tokens SET superseded_at = ? WHERE user_id = ? AND grouping = ? AND token = ?",
                   [.integer(registeredBefore), .text(note.userID), .text(note.group), .text(token)])
        try db.run("""
            INSERT INTO token_supersessions (user_id, grouping, token, app, registered_before) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (user_id, grouping, token) DO UPDATE SET registered_before = excluded.registered_before
            """, [.text(note.userID), .text(note.group), .text(token), .text(note.app), .integer(registeredBefore)])
    }

    /// Applies a replacement in the token's partition: deactivates the token if it is still
    /// registered in the replaced registration's user and group, and not since `registeredBefore`;
    /// and remembers it, for a registration of the token logged after it but made before it
    /// (``registered(_:on:)``).
    static func apply(_ replaced: UserTokenNote, registeredBefore: UnixTime, on db: SQLiteConnection) throws {
        let before = SQLiteValue.integer(registeredBefore.nanoseconds)
        try db.run("""
            INSERT INTO token_replacements (token, user_id, grouping, registered_before) VALUES (?, ?, ?, ?)
            ON CONFLICT (token, user_id, grouping) DO UPDATE SET registered_before = max(registered_before, excluded.registered_before)
            """, [.text(replaced.token), .text(replaced.userID), .text(replaced.group), before])
        let inGroup = replaced.kind == .update ? "kind = 'update' AND channel_id IS ?" : "kind = 'pushToStart' AND app = ?"
        try db.run("""
            UPDATE tokens SET active = 0, deactivated_at = ?
            WHERE token = ? AND user_id = ? AND \(inGroup) AND active = 1 AND registered_at <= ?
            """, [before, .text(replaced.token), .text(replaced.userID),
                  replaced.kind == .update ? replaced.channelID.map(SQLiteValue.text) ?? .null : .text(replaced.app), before])
    }

    /// After a registration in a token's partition: deactivates it at once if a replacement of
    /// a later registration in its group already came (the two were logged out of their order).
    static func registered(_ record: TokenRecord, on db: SQLiteConnection) throws {
        guard let note = UserTokenNote(of: record) else { return }
        let later = try db.query("SELECT registered_before FROM token_replacements WHERE token = ? AND user_id = ? AND grouping = ?",
                                 [.text(note.token), .text(note.userID), .text(note.group)]) { $0.int64(at: 0) }.first
        guard let later, later >= record.registeredAt.nanoseconds else { return }
        try db.run("UPDATE tokens SET active = 0, deactivated_at = ? WHERE token = ?", [.integer(later), .text(note.token)])
    }

    /// Up to `limit` replacements decided and not logged yet, as the operations that apply them.
    static func pendingSupersessions(limit: Int, on db: SQLiteConnection) throws -> [TokenOperation] {
        try db.query("""
            SELECT user_id, token, grouping, app, registered_before FROM token_supersessions ORDER BY user_id, grouping, token LIMIT ?
            """, [.integer(Int64(limit))]) { row in
            let before = UnixTime(nanoseconds: row.int64(at: 4))
            guard let replaced = UserTokenNote(userID: row.text(at: 0) ?? "", token: row.text(at: 1) ?? "", group: row.text(at: 2) ?? "",
                                               app: row.text(at: 3) ?? AppChannelID.defaultApp, registeredAt: before) else {
                throw SQLiteError(code: SQLITE_CORRUPT, message: "a pending replacement has an unreadable group", statement: nil)
            }
            return .supersedeToken(replaced, registeredBefore: before)
        }
    }

    /// Forgets replacements once logged: each only as it was read (a later note may have moved it on).
    static func forget(_ logged: [TokenOperation], on db: SQLiteConnection) throws {
        for case .supersedeToken(let replaced, let registeredBefore) in logged {
            try db.run("DELETE FROM token_supersessions WHERE user_id = ? AND grouping = ? AND token = ? AND registered_before = ?",
                       [.text(replaced.userID), .text(replaced.group), .text(replaced.token), .integer(registeredBefore.nanoseconds)])
        }
    }
}
