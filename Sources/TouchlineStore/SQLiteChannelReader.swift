import TouchlineCore
import TouchlineRuntime

/// Reads committed channels and events through its own connection.
///
/// WAL lets readers run while the ``StoreWriter`` commits, so reads never queue behind writes.
/// **Thread confinement:** one reader per thread or event loop that reads (for example the HTTP
/// loop answering `GET /v1/channels`); it is `@unchecked Sendable` only so it can be handed to
/// that thread. Open it after the writer, which creates the schema.
public final class SQLiteChannelReader: ChannelStoreReader, @unchecked Sendable {
    private let connection: SQLiteConnection

    public init(path: String) throws(StoreError) {
        connection = try SQLiteConnection.openForReading(path: path)
    }

    public func close() { connection.close() }

    public func channel(id: String) throws(StoreError) -> ChannelRecord? {
        try StoreError.wrapping { try SQLiteChannelRows.channel(id: id, on: connection) }
    }

    public func channel(apnsChannelID: String) throws(StoreError) -> ChannelRecord? {
        try StoreError.wrapping {
            try connection.query("SELECT \(SQLiteChannelRows.columns) FROM channels WHERE apns_channel_id = ?",
                                 [.text(apnsChannelID)], row: SQLiteChannelRows.record).first
        }
    }

    public func channels(after afterID: String?, limit: Int) throws(StoreError) -> [ChannelRecord] {
        try StoreError.wrapping {
            try connection.query("SELECT \(SQLiteChannelRows.columns) FROM channels WHERE id > ? ORDER BY id LIMIT ?",
                                 [.text(afterID ?? ""), .integer(Int64(limit))], row: SQLiteChannelRows.record)
        }
    }

    public func channels(status: ChannelStatus) throws(StoreError) -> [ChannelRecord] {
        try StoreError.wrapping {
            try connection.query("SELECT \(SQLiteChannelRows.columns) FROM channels WHERE status = ? ORDER BY id",
                                 [.text(status.rawValue)], row: SQLiteChannelRows.record)
        }
    }

    public func events(channelID: String, afterSeq: Int64, limit: Int) throws(StoreError) -> [StoredEvent] {
        try StoreError.wrapping {
            try connection.query("""
                SELECT seq, received_at, body FROM events WHERE channel_id = ? AND seq > ? ORDER BY seq LIMIT ?
                """, [.text(channelID), .integer(afterSeq), .integer(Int64(limit))]) { row in
                StoredEvent(channelID: channelID, seq: row.int64(at: 0), receivedAt: UnixTime(nanoseconds: row.int64(at: 1)),
                            body: row.blob(at: 2) ?? [])
            }
        }
    }
}
