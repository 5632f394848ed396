import TouchlineCore
import TouchlineRuntime

/// Maps ``WebhookOperation``s to statements and reads the outbox, on a connection owned by the caller's thread.
enum WebhookOutboxRows {
    static func apply(_ operation: WebhookOperation, on db: SQLiteConnection) throws {
        switch operation {
        case .record(let entry):
            let inserted = try db.run("""
                INSERT INTO webhook_outbox (event_id, type, created_at, body) VALUES (?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING
                """, [.text(entry.eventID), .text(entry.type), .integer(entry.createdAt.nanoseconds), .blob(entry.body)])
            guard inserted == 1 else { return }
            let id = try db.query("SELECT id FROM webhook_outbox WHERE event_id = ?", [.text(entry.eventID)]) { $0.int64(at: 0) }.first ?? 0
            for endpoint in Set(entry.endpoints) {
                try db.run("""
                    INSERT INTO webhook_deliveries (endpoint, outbox_id, attempts, next_at, status) VALUES (?, ?, 0, ?, 'pending')
                    """, [.text(endpoint), .integer(id), .integer(entry.createdAt.nanoseconds)])
            }
        case .updateDeliveries(let updates):
            for update in updates {
                try db.run("UPDATE webhook_deliveries SET attempts = ?, next_at = ?, status = ? WHERE endpoint = ? AND outbox_id = ?", [
                    .integer(Int64(update.attempts)), .integer(update.nextAt.nanoseconds), .text(update.status.rawValue),
                    .text(update.endpoint), .integer(update.outboxID),
                ])
            }
        case .prune(let before, let limit):
            try db.run("""
                DELETE FROM webhook_outbox WHERE id IN (SELECT id FROM webhook_outbox WHERE created_at < ? ORDER BY created_at LIMIT ?)
                """, [.integer(before.nanoseconds), .integer(Int64(limit))])
        }
    }

    static let eventColumns = "o.id, o.event_id, o.type, o.created_at, o.body"

    static func event(_ row: SQLiteStatement, from column: Int32 = 0) -> StoredWebhookEvent {
        StoredWebhookEvent(id: row.int64(at: column), eventID: row.text(at: column + 1) ?? "", type: row.text(at: column + 2) ?? "",
                           createdAt: UnixTime(nanoseconds: row.int64(at: column + 3)), body: row.blob(at: column + 4) ?? [])
    }
}
