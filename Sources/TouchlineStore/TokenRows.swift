import CSQLite
import TouchlineCore
import TouchlineRuntime

/// Maps token records to rows and ``TokenOperation``s to statements, on a connection owned by the caller's thread.
enum TokenRows {
    static let columns = "token, kind, channel_id, user_id, environment, registered_at, active, deactivated_at, app"

    /// The record without its follows (read separately with ``follows(of:on:)``).
    static func record(_ row: SQLiteStatement) throws -> TokenRecord {
        let token = row.text(at: 0) ?? ""
        guard let kind = row.text(at: 1).flatMap(TokenKind.init(rawValue:)),
              let environment = row.text(at: 4).flatMap(TokenEnvironment.init(rawValue:)) else {
            throw SQLiteError(code: SQLITE_CORRUPT, message: "token \(redacted(token)) has an unreadable kind or environment", statement: nil)
        }
        return TokenRecord(token: token, kind: kind, channelID: row.text(at: 2), userID: row.text(at: 3), environment: environment,
                           registeredAt: UnixTime(nanoseconds: row.int64(at: 5)), active: row.int64(at: 6) == 1,
                           deactivatedAt: row.optionalInt64(at: 7).map(UnixTime.init(nanoseconds:)), app: row.text(at: 8) ?? AppChannelID.defaultApp)
    }

    static func withFollows(_ record: TokenRecord, on db: SQLiteConnection) throws -> TokenRecord {
        var record = record
        record.follows = try db.query("SELECT follow FROM token_follows WHERE token = ? ORDER BY follow", [.text(record.token)]) {
            $0.text(at: 0) ?? ""
        }
        return record
    }

    /// The first 8 hex digits: enough to find a token in the registry, too little to push to it.
    static func redacted(_ token: String) -> String { String(token.prefix(8)) + "…" }

    /// Applies `operation` by `rules`; returns the tokens it deactivated (only `.deactivateToken`
    /// does, and only a token still active and not registered again after APNs' timestamp: 0 or 1).
    @discardableResult
    static func apply(_ operation: TokenOperation, rules: RegistryRules = .whole, on db: SQLiteConnection) throws -> Int {
        switch operation {
        case .registerToken(let record):
            try register(record, replacingUsersTokens: rules == .whole, on: db)
            if rules == .partition { try UserDirectoryRows.registered(record, on: db) }
        case .noteUserToken(let note):
            if rules == .partition { try UserDirectoryRows.note(note, on: db) }
        case .supersedeToken(let replaced, let registeredBefore):
            try UserDirectoryRows.apply(replaced, registeredBefore: registeredBefore, on: db)
        case .deleteToken(let token):
            try db.run("DELETE FROM tokens WHERE token = ?", [.text(token.lowercased())])
        case .deactivateToken(let token, let apnsTimestamp, let at):
            return try db.run("UPDATE tokens SET active = 0, deactivated_at = ? WHERE token = ? AND active = 1 AND registered_at <= ?",
                              [.integer(at.nanoseconds), .text(token.lowercased()), .integer(apnsTimestamp.nanoseconds)])
        case .createJob, .advanceJob, .retargetScheduledJob, .scheduleRetry, .clearTarget, .deadLetter, .markReplayed:
            try PersonalJobRows.apply(operation, on: db)
        case .recordStarts(let channel, let tokens):
            try GenerationStartRows.record(tokens, into: channel, on: db)
        case .forgetStarts(let channel):
            try GenerationStartRows.forget(channel, on: db)
        case .webhook(let operation):
            try WebhookOutboxRows.apply(operation, on: db)
        case .rememberIdempotencyKey(let record):
            try IdempotencyRows.remember(record, on: db)
        case .pruneIdempotencyKeys(let expiredBy, let limit):
            try IdempotencyRows.prune(expiredBy: expiredBy, limit: limit, on: db)
        }
        return 0
    }

    /// Inserts or re-registers `record`; with `replacingUsersTokens`, deactivates the user's
    /// previous token of its kind first (a partition's copy leaves that to the user directory).
    private static func register(_ record: TokenRecord, replacingUsersTokens: Bool, on db: SQLiteConnection) throws {
        let at = SQLiteValue.integer(record.registeredAt.nanoseconds)
        if replacingUsersTokens, let userID = record.userID {
            switch record.kind {
            case .update:
                try db.run("""
                    UPDATE tokens SET active = 0, deactivated_at = ?
                    WHERE kind = 'update' AND channel_id IS ? AND user_id = ? AND token <> ? AND active = 1
                    """, [at, record.channelID.map(SQLiteValue.text) ?? .null, .text(userID), .text(record.token)])
            case .pushToStart:
                try db.run("""
                    UPDATE tokens SET active = 0, deactivated_at = ?
                    WHERE user_id = ? AND kind = 'pushToStart' AND app = ? AND token <> ? AND active = 1
                    """, [at, .text(userID), .text(record.app), .text(record.token)])
            }
        }
        try db.run("""
            INSERT INTO tokens (\(columns)) VALUES (?, ?, ?, ?, ?, ?, 1, NULL, ?)
            ON CONFLICT (token) DO UPDATE SET kind = excluded.kind, channel_id = excluded.channel_id, user_id = excluded.user_id,
                environment = excluded.environment, registered_at = excluded.registered_at, active = 1, deactivated_at = NULL,
                app = excluded.app
            """, [
                .text(record.token), .text(record.kind.rawValue), record.channelID.map(SQLiteValue.text) ?? .null,
                record.userID.map(SQLiteValue.text) ?? .null, .text(record.environment.rawValue), at, .text(record.app),
            ])
        try db.run("DELETE FROM token_follows WHERE token = ?", [.text(record.token)])
        for follow in Set(record.follows) {
            try db.run("INSERT INTO token_follows (follow, token) VALUES (?, ?)", [.text(follow), .text(record.token)])
        }
    }
}
