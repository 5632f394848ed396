import CSQLite
import TouchlineCore
import TouchlineRuntime

/// A request's `Idempotency-Key` as stored: who sent it, on which route, a digest of the request,
/// and the answer it got, kept until `expiresAt` so that a repeat gets that answer again
/// instead of a second job (docs/api.md, "Idempotent requests").
public struct IdempotencyRecord: Sendable, Equatable {
    /// The API key's identity: a digest of the key, never the secret itself.
    public var scope: String
    /// The route the key was used on, e.g. `POST /v1/personal`.
    public var route: String
    /// The client's key, as sent (printable ASCII, 1 to 255 characters).
    public var key: String
    /// SHA-256 of the request it was first used with (method, path and body).
    public var requestHash: [UInt8]
    /// The answer the first request got.
    public var status: Int
    public var response: [UInt8]
    public var createdAt: UnixTime
    public var expiresAt: UnixTime

    public init(scope: String, route: String, key: String, requestHash: [UInt8], status: Int, response: [UInt8],
                createdAt: UnixTime, expiresAt: UnixTime) {
        self.scope = scope
        self.route = route
        self.key = key
        self.requestHash = requestHash
        self.status = status
        self.response = response
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// Maps ``IdempotencyRecord``s to rows of `idempotency_keys`, on a connection owned by the caller's thread.
enum IdempotencyRows {
    static let columns = "scope, route, key, request_hash, status, response, created_at, expires_at"

    /// Inserts the record, or replaces one of the same key that had expired by `createdAt`; a
    /// key still held (not expired) fails the list, so two requests can never both keep it.
    static func remember(_ record: IdempotencyRecord, on db: SQLiteConnection) throws {
        let changed = try db.run("""
            INSERT INTO idempotency_keys (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (scope, route, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
                response = excluded.response, created_at = excluded.created_at, expires_at = excluded.expires_at
            WHERE idempotency_keys.expires_at <= excluded.created_at
            """, [
                .text(record.scope), .text(record.route), .text(record.key), .blob(record.requestHash), .integer(Int64(record.status)),
                .blob(record.response), .integer(record.createdAt.nanoseconds), .integer(record.expiresAt.nanoseconds),
            ])
        guard changed == 1 else {
            throw SQLiteError(code: SQLITE_CONSTRAINT, message: "idempotency key \"\(record.key)\" on \(record.route) is held by another request",
                              statement: nil)
        }
    }

    /// Deletes at most `limit` records expired by `expiredBy`, the oldest first (a range of the expiry index).
    static func prune(expiredBy: UnixTime, limit: Int, on db: SQLiteConnection) throws {
        try db.run("""
            DELETE FROM idempotency_keys WHERE (scope, route, key) IN
                (SELECT scope, route, key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)
            """, [.integer(expiredBy.nanoseconds), .integer(Int64(limit))])
    }

    static func record(_ row: SQLiteStatement) throws -> IdempotencyRecord {
        let record = IdempotencyRecord(scope: row.text(at: 0) ?? "", route: row.text(at: 1) ?? "", key: row.text(at: 2) ?? "",
                                       requestHash: row.blob(at: 3) ?? [], status: Int(row.int64(at: 4)), response: row.blob(at: 5) ?? [],
                                       createdAt: UnixTime(nanoseconds: row.int64(at: 6)), expiresAt: UnixTime(nanoseconds: row.int64(at: 7)))
        // A record that cannot be answered again is not silently taken for a new request.
        guard record.requestHash.count == 32, (200...299).contains(record.status) else {
            throw SQLiteError(code: SQLITE_CORRUPT, message: "idempotency key \"\(record.key)\" on \(record.route) has an unreadable record",
                              statement: nil)
        }
        return record
    }
}

extension SQLiteTokenReader {
    /// The record of `key` used by `scope` on `route`, unless it expired by `now`.
    public func idempotencyRecord(scope: String, route: String, key: String, at now: UnixTime) throws(StoreError) -> IdempotencyRecord? {
        try StoreError.wrapping {
            try connection.query("""
                SELECT \(IdempotencyRows.columns) FROM idempotency_keys WHERE scope = ? AND route = ? AND key = ? AND expires_at > ?
                """, [.text(scope), .text(route), .text(key), .integer(now.nanoseconds)], row: IdempotencyRows.record).first
        }
    }

    /// Idempotency records kept, expired or not (figures and tests).
    public func idempotencyRecordCount() throws(StoreError) -> Int {
        try StoreError.wrapping {
            Int(try connection.query("SELECT count(*) FROM idempotency_keys") { $0.int64(at: 0) }.first ?? 0)
        }
    }
}
