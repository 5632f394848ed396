import TouchlineCore
import TouchlineRuntime

/// Reads one store file's webhook outbox through its own connection: due deliveries for the
/// delivery loop, pages of events for `GET /v1/events`, and each endpoint's backlog for metrics.
///
/// Every read is bounded by a `limit` or is an aggregate over an index. **Thread confinement:**
/// like ``SQLiteChannelReader``, one reader per thread or event loop; `@unchecked Sendable` only
/// so it can be handed to that thread. Open it after the writer, which creates the schema.
public final class SQLiteWebhookReader: WebhookOutboxReader, @unchecked Sendable {
    private let connection: SQLiteConnection

    public init(path: String) throws(StoreError) {
        connection = try SQLiteConnection.openForReading(path: path)
    }

    public func close() { connection.close() }

    /// Up to `limit` of `endpoint`'s pending deliveries due at `now`, the earliest due first.
    public func dueDeliveries(endpoint: String, at now: UnixTime, limit: Int) throws(StoreError) -> [DueWebhookDelivery] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT d.attempts, \(WebhookOutboxRows.eventColumns) FROM webhook_deliveries d JOIN webhook_outbox o ON o.id = d.outbox_id
                WHERE d.status = 'pending' AND d.endpoint = ? AND d.next_at <= ? ORDER BY d.next_at, d.outbox_id LIMIT ?
                """, [.text(endpoint), .integer(now.nanoseconds), .integer(Int64(limit))]) { row in
                DueWebhookDelivery(endpoint: endpoint, attempts: Int(row.int64(at: 0)), event: WebhookOutboxRows.event(row, from: 1))
            }
        }
    }

    /// When `endpoint`'s next pending delivery is due (nil: none pending).
    public func nextDue(endpoint: String) throws(StoreError) -> UnixTime? {
        try StoreError.wrapping {
            try connection.query("SELECT min(next_at) FROM webhook_deliveries WHERE status = 'pending' AND endpoint = ?",
                                 [.text(endpoint)]) { $0.optionalInt64(at: 0).map(UnixTime.init(nanoseconds:)) }.first ?? nil
        }
    }

    /// Up to `limit` events with an id above `after`, in id (commit) order.
    public func events(after: Int64, limit: Int) throws(StoreError) -> [StoredWebhookEvent] {
        try StoreError.wrapping {
            try connection.query("SELECT \(WebhookOutboxRows.eventColumns) FROM webhook_outbox o WHERE o.id > ? ORDER BY o.id LIMIT ?",
                                 [.integer(after), .integer(Int64(limit))]) { WebhookOutboxRows.event($0) }
        }
    }

    /// When the oldest event kept was created (nil: none): an index lookup, cheap enough to ask
    /// on every turn of the delivery loop whether anything is due for pruning.
    public func oldestEventCreatedAt() throws(StoreError) -> UnixTime? {
        try StoreError.wrapping {
            try connection.query("SELECT min(created_at) FROM webhook_outbox") { $0.optionalInt64(at: 0).map(UnixTime.init(nanoseconds:)) }.first ?? nil
        }
    }

    /// The highest event id stored (0: none yet).
    public func lastEventID() throws(StoreError) -> Int64 {
        try StoreError.wrapping { try connection.query("SELECT coalesce(max(id), 0) FROM webhook_outbox") { $0.int64(at: 0) }.first ?? 0 }
    }

    /// `endpoint`'s pending and dead deliveries.
    public func backlog(endpoint: String) throws(StoreError) -> WebhookEndpointBacklog {
        try StoreError.wrapping {
            var backlog = WebhookEndpointBacklog()
            for (status, count) in try connection.query("""
                SELECT status, count(*) FROM webhook_deliveries WHERE status IN ('pending', 'dead') AND endpoint = ? GROUP BY status
                """, [.text(endpoint)], row: { ($0.text(at: 0) ?? "", Int($0.int64(at: 1))) }) {
                if status == "pending" { backlog.pending = count } else { backlog.dead = count }
            }
            if backlog.pending > 0 {
                backlog.oldestPendingAt = try connection.query("""
                    SELECT min(o.created_at) FROM webhook_deliveries d JOIN webhook_outbox o ON o.id = d.outbox_id
                    WHERE d.status = 'pending' AND d.endpoint = ?
                    """, [.text(endpoint)]) { $0.optionalInt64(at: 0).map(UnixTime.init(nanoseconds:)) }.first ?? nil
            }
            return backlog
        }
    }
}
