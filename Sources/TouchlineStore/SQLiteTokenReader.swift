import CSQLite
import TouchlineCore
import TouchlineRuntime

/// Reads committed tokens, personal jobs and dead letters through its own connection.
///
/// Every read is bounded (a key lookup or a page of `limit` rows after a cursor), so a 1M-token
/// fan-out streams through a fixed window instead of loading its audience. **Thread
/// confinement:** like ``SQLiteChannelReader``, one reader per thread or event loop; it is
/// `@unchecked Sendable` only so it can be handed to that thread. Open it after the writer,
/// which creates the schema.
public final class SQLiteTokenReader: TokenRegistryReader, PersonalJobReader, @unchecked Sendable {
    /// Internal (not private) for the readers of other tables in extensions of their own files.
    let connection: SQLiteConnection

    public init(path: String) throws(StoreError) {
        connection = try SQLiteConnection.openForReading(path: path)
    }

    public func close() { connection.close() }

    /// The token with its follows, active or not.
    public func token(_ token: String) throws(StoreError) -> TokenRecord? {
        try StoreError.wrapping {
            try connection.query("SELECT \(TokenRows.columns) FROM tokens WHERE token = ?", [.text(token.lowercased())],
                                 row: TokenRows.record).first.map { try TokenRows.withFollows($0, on: connection) }
        }
    }

    /// A user's tokens of `app` (active and deactivated) with their follows, for support (`GET /v1/tokens?userId=`).
    public func tokens(userID: String, app: String = AppChannelID.defaultApp, limit: Int = 100) throws(StoreError) -> [TokenRecord] {
        try StoreError.wrapping {
            try connection.query("SELECT \(TokenRows.columns) FROM tokens WHERE user_id = ? AND app = ? ORDER BY registered_at DESC, token LIMIT ?",
                                 [.text(userID), .text(app), .integer(Int64(limit))], row: TokenRows.record)
                .map { try TokenRows.withFollows($0, on: connection) }
        }
    }

    /// A partition's user directory (``UserDirectoryRows``): up to `limit` tokens `userID`
    /// registered for `app`, the newest registration first (ties in token order). Their records
    /// are in their own partitions, which may have moved them on since.
    public func directoryTokens(userID: String, app: String, limit: Int) throws(StoreError) -> [String] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT token, max(registered_at) AS newest FROM user_tokens WHERE user_id = ? AND app = ?
                GROUP BY token ORDER BY newest DESC, token LIMIT ?
                """, [.text(userID), .text(app), .integer(Int64(limit))]) { $0.text(at: 0) ?? "" }
        }
    }

    public func tokens(after cursor: String?, limit: Int) throws(StoreError) -> [TokenRecord] {
        try StoreError.wrapping {
            try connection.query("SELECT \(TokenRows.columns) FROM tokens WHERE token > ? ORDER BY token LIMIT ?",
                                 [.text(cursor ?? ""), .integer(Int64(limit))], row: TokenRows.record)
                .map { try TokenRows.withFollows($0, on: connection) }
        }
    }

    /// The next `limit` active push-to-start tokens following `follow`, in token order after
    /// `cursor` (nil to start): pass the last token of a page as the next cursor; an empty
    /// page is the end. Walks the `(follow, token)` key, so each page costs O(limit)
    /// (``FollowerPageRead``). `environment` keeps only tokens of that APNs environment (nil:
    /// any); only tokens of `app` count.
    public func pushToStartTokens(following follow: String, app: String = AppChannelID.defaultApp, after cursor: String?, limit: Int,
                                  environment: TokenEnvironment? = nil) throws(StoreError) -> [TokenTarget] {
        try StoreError.wrapping {
            var read = FollowerPageRead(connection: connection, follow: follow, app: app, environment: environment)
            return try read.targets(after: cursor, limit: limit)
        }
    }

    /// What `GET /v1/personal/{job}` shows: clients poll it during a fan-out, and the whole
    /// record carries the payload and the tokens ended after the cursor (thousands in a large
    /// fan-out, split into strings on every read).
    public func jobSummary(id: String) throws(StoreError) -> PersonalJobSummary? {
        try StoreError.wrapping {
            try connection.query("""
                SELECT status, targeted, sent, failed, expired, pending, start_at, updated_at, app FROM personal_jobs WHERE id = ?
                """, [.text(id)]) { row in
                guard let status = row.text(at: 0).flatMap(PersonalJobStatus.init(rawValue:)),
                      let failed = PersonalJobCounts.failed(fromJSON: row.text(at: 3) ?? "") else {
                    throw SQLiteError(code: SQLITE_CORRUPT, message: "personal job \"\(id)\" has an unreadable status or failure counts",
                                      statement: nil)
                }
                return PersonalJobSummary(app: row.text(at: 8) ?? AppChannelID.defaultApp, status: status,
                                          counts: PersonalJobCounts(targeted: row.int64(at: 1), sent: row.int64(at: 2), failed: failed,
                                                                    expired: row.int64(at: 4), pending: row.int64(at: 5)),
                                          startAt: row.optionalInt64(at: 6).map(UnixTime.init(nanoseconds:)),
                                          updatedAt: UnixTime(nanoseconds: row.int64(at: 7)))
            }.first
        }
    }

    public func job(id: String) throws(StoreError) -> PersonalJobRecord? {
        try StoreError.wrapping {
            try connection.query("SELECT \(PersonalJobRows.columns) FROM personal_jobs WHERE id = ?", [.text(id)],
                                 row: PersonalJobRows.job).first
        }
    }

    /// Jobs in `status`, oldest first: at startup `.pending` and `.running` are the work to resume.
    public func jobs(status: PersonalJobStatus, limit: Int) throws(StoreError) -> [PersonalJobRecord] {
        try StoreError.wrapping {
            try connection.query("SELECT \(PersonalJobRows.columns) FROM personal_jobs WHERE status = ? ORDER BY created_at, id LIMIT ?",
                                 [.text(status.rawValue), .integer(Int64(limit))], row: PersonalJobRows.job)
        }
    }

    /// A job's retries due at or before `time`, earliest first.
    public func retriesDue(jobID: String, at time: UnixTime, limit: Int) throws(StoreError) -> [PersonalJobRetry] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT token, attempts, retry_at FROM personal_targets
                WHERE job_id = ? AND state = 'retry' AND retry_at <= ? ORDER BY retry_at LIMIT ?
                """, [.text(jobID), .integer(time.nanoseconds), .integer(Int64(limit))]) { row in
                PersonalJobRetry(jobID: jobID, token: row.text(at: 0) ?? "", attempts: Int(row.int64(at: 1)),
                                 retryAt: UnixTime(nanoseconds: row.int64(at: 2)))
            }
        }
    }

    /// Dead letters with `id > afterID` (0 to start), optionally only those in `status`, of one
    /// job and with one reason, in id order: keyset pagination for `GET /v1/deadletters`.
    /// `status` and `jobID` walk an index; a `reason` alone scans in id order until `limit` match.
    public func deadLetters(status: DeadLetterStatus? = nil, jobID: String? = nil, reason: String? = nil,
                            after afterID: Int64, limit: Int) throws(StoreError) -> [DeadLetterRecord] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT \(PersonalJobRows.deadLetterColumns) FROM dead_letters
                WHERE id > ?1 AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR job_id = ?3) AND (?4 IS NULL OR reason = ?4)
                ORDER BY id LIMIT ?5
                """, [.integer(afterID), status.map { .text($0.rawValue) } ?? .null, jobID.map(SQLiteValue.text) ?? .null,
                      reason.map(SQLiteValue.text) ?? .null, .integer(Int64(limit))], row: PersonalJobRows.deadLetter)
        }
    }

    /// The dead letters with these ids, whatever their status, in id order; ids the table does
    /// not have are simply missing from the answer. One statement for the whole list.
    public func deadLetters(ids: [Int64]) throws(StoreError) -> [DeadLetterRecord] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT \(PersonalJobRows.deadLetterColumns) FROM dead_letters
                WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY id
                """, [.text(Self.jsonArray(ids.map(JSONValue.integer)))], row: PersonalJobRows.deadLetter)
        }
    }

    /// Those of `tokens` that are registered for `app` and active, in token order (the members
    /// of an explicit token audience that can still be sent to). One statement for the whole list.
    public func activeTokens(among tokens: [String], app: String = AppChannelID.defaultApp,
                             environment: TokenEnvironment? = nil) throws(StoreError) -> [String] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT token FROM tokens WHERE token IN (SELECT value FROM json_each(?1)) AND active = 1
                    AND (?2 IS NULL OR environment = ?2) AND app = ?3 ORDER BY token
                """, [.text(Self.jsonArray(tokens.map { .string($0.lowercased()) })), environment.map { .text($0.rawValue) } ?? .null,
                      .text(app)]) {
                $0.text(at: 0) ?? ""
            }
        }
    }

    private static func jsonArray(_ items: [JSONValue]) -> String {
        String(decoding: JSONValue.array(items).encoded, as: UTF8.self)
    }

    /// What a replay takes: dead letters still `.dead` that match `selection`, oldest first.
    /// Submit ``TokenOperation/markReplayed(ids:)`` with their ids in the batch that re-queues them.
    public func deadLetters(selectedBy selection: DeadLetterSelection) throws(StoreError) -> [DeadLetterRecord] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT \(PersonalJobRows.deadLetterColumns) FROM dead_letters
                WHERE status = 'dead' AND (?1 IS NULL OR job_id = ?1) AND (?2 IS NULL OR reason = ?2) ORDER BY id LIMIT ?3
                """, [selection.jobID.map(SQLiteValue.text) ?? .null, selection.reason.map(SQLiteValue.text) ?? .null,
                      .integer(Int64(selection.limit))], row: PersonalJobRows.deadLetter)
        }
    }
}
