import CSQLite
import TouchlineCore
import TouchlineRuntime

/// Maps personal jobs, their target state and dead letters to rows, on a connection owned by the caller's thread.
enum PersonalJobRows {
    static let columns = """
        id, created_at, audience, payload, priority, expiration, status, cursor, targeted, sent, failed, expired, pending, updated_at,
        ended_after_cursor, start_at, app
        """
    static let deadLetterColumns = "id, job_id, token, reason, status, at"

    /// The row as a record; a status, failure counts or ended list it cannot read is named in
    /// `unreadable` (with stand-ins), so one bad row never hides the others.
    static func job(_ row: SQLiteStatement) -> PersonalJobRecord {
        let id = row.text(at: 0) ?? ""
        let status = row.text(at: 6).flatMap(PersonalJobStatus.init(rawValue:))
        let failed = PersonalJobCounts.failed(fromJSON: row.text(at: 10) ?? "")
        let endedAfterCursor = PersonalJobCounts.tokens(fromText: row.text(at: 14) ?? "")
        var unreadable: String?
        if endedAfterCursor == nil { unreadable = "its list of tokens ended after the cursor cannot be read" }
        if failed == nil { unreadable = "its failure counts are not a JSON object of counts" }
        if status == nil { unreadable = "its status \"\(row.text(at: 6) ?? "")\" is not one of the known statuses" }
        let counts = PersonalJobCounts(targeted: row.int64(at: 8), sent: row.int64(at: 9), failed: failed ?? [:],
                                       expired: row.int64(at: 11), pending: row.int64(at: 12))
        var record = PersonalJobRecord(
            id: id, createdAt: UnixTime(nanoseconds: row.int64(at: 1)), audience: row.text(at: 2) ?? "{}",
            payload: row.blob(at: 3) ?? [], priority: Int(row.int64(at: 4)),
            expiration: row.optionalInt64(at: 5).map(UnixTime.init(nanoseconds:)), status: status ?? .pending, cursor: row.text(at: 7),
            endedAfterCursor: endedAfterCursor ?? [], counts: counts, updatedAt: UnixTime(nanoseconds: row.int64(at: 13)),
            startAt: row.optionalInt64(at: 15).map(UnixTime.init(nanoseconds:)), app: row.text(at: 16) ?? AppChannelID.defaultApp)
        record.unreadable = unreadable
        return record
    }

    static func deadLetter(_ row: SQLiteStatement) throws -> DeadLetterRecord {
        guard let status = row.text(at: 4).flatMap(DeadLetterStatus.init(rawValue:)) else {
            throw SQLiteError(code: SQLITE_CORRUPT, message: "dead letter \(row.int64(at: 0)) has an unreadable status", statement: nil)
        }
        return DeadLetterRecord(id: row.int64(at: 0), jobID: row.text(at: 1) ?? "", token: row.text(at: 2) ?? "",
                                reason: row.text(at: 3) ?? "", status: status, at: UnixTime(nanoseconds: row.int64(at: 5)))
    }

    /// Applies the job and dead-letter cases of ``TokenOperation`` (the token cases go to ``TokenRows``);
    /// progress for a job the store does not have fails the batch with an error naming the job.
    static func apply(_ operation: TokenOperation, on db: SQLiteConnection) throws {
        switch operation {
        case .createJob(let job):
            try db.run("INSERT INTO personal_jobs (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                .text(job.id), .integer(job.createdAt.nanoseconds), .text(job.audience), .blob(job.payload),
                .integer(Int64(job.priority)), job.expiration.map { .integer($0.nanoseconds) } ?? .null, .text(job.status.rawValue),
                job.cursor.map(SQLiteValue.text) ?? .null, .integer(job.counts.targeted), .integer(job.counts.sent),
                .text(job.counts.failedJSON), .integer(job.counts.expired), .integer(job.counts.pending),
                .integer(job.updatedAt.nanoseconds), .text(PersonalJobCounts.tokensText(job.endedAfterCursor)),
                job.startAt.map { .integer($0.nanoseconds) } ?? .null, .text(job.app),
            ])
        case .advanceJob(let progress):
            let changed = try db.run("""
                UPDATE personal_jobs SET cursor = coalesce(?, cursor), status = coalesce(?, status), targeted = ?, sent = ?,
                    failed = ?, expired = ?, pending = ?, updated_at = ?, ended_after_cursor = ?
                WHERE id = ?
                """, [
                    progress.cursor.map(SQLiteValue.text) ?? .null, progress.status.map { .text($0.rawValue) } ?? .null,
                    .integer(progress.counts.targeted), .integer(progress.counts.sent), .text(progress.counts.failedJSON),
                    .integer(progress.counts.expired), .integer(progress.counts.pending), .integer(progress.at.nanoseconds),
                    .text(PersonalJobCounts.tokensText(progress.endedAfterCursor)), .text(progress.jobID),
                ])
            if changed == 0 {
                throw SQLiteError(code: SQLITE_ERROR, message: "unknown personal job \"\(progress.jobID)\"", statement: nil)
            }
        case .retargetScheduledJob(let jobID, let payload):
            try db.run("UPDATE personal_jobs SET payload = ? WHERE id = ? AND status = 'pending'", [.blob(payload), .text(jobID)])
        case .scheduleRetry(let retry):
            try db.run("""
                INSERT INTO personal_targets (job_id, token, state, attempts, retry_at) VALUES (?, ?, 'retry', ?, ?)
                ON CONFLICT (job_id, token) DO UPDATE SET state = 'retry', attempts = excluded.attempts, retry_at = excluded.retry_at
                """, [.text(retry.jobID), .text(retry.token), .integer(Int64(retry.attempts)), .integer(retry.retryAt.nanoseconds)])
        case .clearTarget(let jobID, let token):
            try db.run("DELETE FROM personal_targets WHERE job_id = ? AND token = ?", [.text(jobID), .text(token)])
        case .deadLetter(let letter):
            try db.run("""
                INSERT INTO dead_letters (job_id, token, reason, status, at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (job_id, token) DO UPDATE SET reason = excluded.reason, status = excluded.status, at = excluded.at
                """, [.text(letter.jobID), .text(letter.token), .text(letter.reason), .text(letter.status.rawValue),
                      .integer(letter.at.nanoseconds)])
            try db.run("""
                INSERT INTO personal_targets (job_id, token, state, attempts, retry_at) VALUES (?, ?, 'deadLettered', 0, NULL)
                ON CONFLICT (job_id, token) DO UPDATE SET state = 'deadLettered', retry_at = NULL
                """, [.text(letter.jobID), .text(letter.token)])
        case .markReplayed(let ids):
            for id in ids {
                guard try db.run("UPDATE dead_letters SET status = 'replayed' WHERE id = ? AND status = 'dead'", [.integer(id)]) == 1 else {
                    throw SQLiteError(code: SQLITE_CONSTRAINT, message: "dead letter \(id) is unknown or was already replayed", statement: nil)
                }
            }
        case .registerToken, .deleteToken, .deactivateToken, .noteUserToken, .supersedeToken, .recordStarts, .forgetStarts, .webhook,
             .rememberIdempotencyKey, .pruneIdempotencyKeys:
            try TokenRows.apply(operation, on: db)
        }
    }
}
