import CSQLite
import TouchlineCore
import TouchlineRuntime

/// Maps records to rows and store operations to statements, on a connection owned by the caller's thread.
enum SQLiteChannelRows {
    static let columns = """
        id, apns_channel_id, storage_policy, policy, status, created_at, updated_at, content_state, last_sent_state,
        last_sent_timestamp, last_seq, engine_snapshot, dismiss_at, ended_at, counters
        """

    /// The row as a record; a storage policy or status it cannot read is named in `unreadable`
    /// (the record then carries stand-ins), so one bad row never hides the others.
    static func record(_ row: SQLiteStatement) -> ChannelRecord {
        let id = row.text(at: 0) ?? ""
        let policy = ChannelStorage(messageStoragePolicy: Int(row.int64(at: 2)))
        let status = row.text(at: 4).flatMap(ChannelStatus.init(rawValue:))
        var unreadable: String?
        if policy == nil { unreadable = "its storage policy \(row.int64(at: 2)) is neither 0 nor 1" }
        if status == nil { unreadable = "its status \"\(row.text(at: 4) ?? "")\" is not one of the known statuses" }
        let end = row.optionalInt64(at: 13).map { endedAt in
            ChannelEnd(dismissAt: row.optionalInt64(at: 12).map(UnixTime.init(nanoseconds:)), endedAt: UnixTime(nanoseconds: endedAt))
        }
        return ChannelRecord(
            id: id, apnsChannelID: row.text(at: 1), storagePolicy: policy ?? .noStorage, policyJSON: row.text(at: 3) ?? "{}",
            status: status ?? .broken, unreadable: unreadable, createdAt: UnixTime(nanoseconds: row.int64(at: 5)), updatedAt: UnixTime(nanoseconds: row.int64(at: 6)),
            contentState: row.blob(at: 7) ?? [], lastSentState: row.blob(at: 8), lastSentTimestamp: row.optionalInt64(at: 9),
            lastSeq: row.int64(at: 10), engineSnapshot: row.blob(at: 11), end: end, countersJSON: row.text(at: 14) ?? "{}")
    }

    static func channel(id: String, on db: SQLiteConnection) throws -> ChannelRecord? {
        try db.query("SELECT \(columns) FROM channels WHERE id = ?", [.text(id)], row: record).first
    }

    /// Inserts `record` unless its id exists; returns whether it did.
    static func insert(_ record: ChannelRecord, on db: SQLiteConnection) throws -> Bool {
        let changed = try db.run("""
            INSERT INTO channels (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """, [
                .text(record.id), optional(record.apnsChannelID, SQLiteValue.text), .integer(Int64(record.storagePolicy.messageStoragePolicy)),
                .text(record.policyJSON), .text(record.status.rawValue), .integer(record.createdAt.nanoseconds),
                .integer(record.updatedAt.nanoseconds), .blob(record.contentState), optional(record.lastSentState, SQLiteValue.blob),
                optional(record.lastSentTimestamp, SQLiteValue.integer), .integer(record.lastSeq),
                optional(record.engineSnapshot, SQLiteValue.blob), optional(record.end?.dismissAt?.nanoseconds, SQLiteValue.integer),
                optional(record.end?.endedAt.nanoseconds, SQLiteValue.integer), .text(record.countersJSON),
            ])
        return changed == 1
    }

    /// Applies one operation; throws `StoreError.unknownChannel` when an update finds no row.
    static func apply(_ operation: StoreOperation, on db: SQLiteConnection) throws {
        switch operation {
        case .createChannel(let record):
            _ = try insert(record, on: db)
        case .channelCreated(let id, let apnsID, let at):
            try expectRow(id, try db.run(
                "UPDATE channels SET apns_channel_id = ?, status = 'active', updated_at = ? WHERE id = ?",
                [.text(apnsID), .integer(at.nanoseconds), .text(id)]))
        case .updateState(let update):
            try expectRow(update.channelID, try db.run("""
                UPDATE channels SET updated_at = ?, content_state = coalesce(?, content_state), last_seq = coalesce(?, last_seq),
                    last_sent_state = coalesce(?, last_sent_state), last_sent_timestamp = coalesce(?, last_sent_timestamp),
                    engine_snapshot = coalesce(?, engine_snapshot), counters = coalesce(?, counters), policy = coalesce(?, policy)
                WHERE id = ?
                """, [
                    .integer(update.updatedAt.nanoseconds), optional(update.contentState, SQLiteValue.blob),
                    optional(update.lastSeq, SQLiteValue.integer), optional(update.lastSentState, SQLiteValue.blob),
                    optional(update.lastSentTimestamp, SQLiteValue.integer), optional(update.engineSnapshot, SQLiteValue.blob),
                    optional(update.countersJSON, SQLiteValue.text), optional(update.policyJSON, SQLiteValue.text),
                    .text(update.channelID),
                ]))
        case .markStatus(let id, let status, let end, let at):
            try expectRow(id, try db.run("""
                UPDATE channels SET status = ?, updated_at = ?, dismiss_at = coalesce(?, dismiss_at), ended_at = coalesce(?, ended_at)
                WHERE id = ?
                """, [
                    .text(status.rawValue), .integer(at.nanoseconds), optional(end?.dismissAt?.nanoseconds, SQLiteValue.integer),
                    optional(end?.endedAt.nanoseconds, SQLiteValue.integer), .text(id),
                ]))
        case .deleteChannel(let id):
            try db.run("DELETE FROM channels WHERE id = ?", [.text(id)])
        case .appendEvents(let events), .recordEvents(let events):
            for event in events {
                try db.run("INSERT INTO events (channel_id, seq, received_at, body) VALUES (?, ?, ?, ?)", [
                    .text(event.channelID), .integer(event.seq), .integer(event.receivedAt.nanoseconds), .blob(event.body),
                ])
            }
        case .truncateEvents(let id, let throughSeq):
            try db.run("DELETE FROM events WHERE channel_id = ? AND seq <= ?", [.text(id), .integer(throughSeq)])
        case .webhook(let operation):
            try WebhookOutboxRows.apply(operation, on: db)
        }
    }

    private static func expectRow(_ id: String, _ changed: Int) throws {
        if changed == 0 { throw StoreError.unknownChannel(id) }
    }

    private static func optional<T>(_ value: T?, _ wrap: (T) -> SQLiteValue) -> SQLiteValue {
        value.map(wrap) ?? .null
    }
}
