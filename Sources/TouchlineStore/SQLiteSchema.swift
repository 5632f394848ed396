import CSQLite
import TouchlineRuntime

/// The store's tables, versioned with `PRAGMA user_version`. See docs/storage.md.
enum SQLiteSchema {
    static let version: Int64 = 1

    static let statements = """
        CREATE TABLE IF NOT EXISTS channels (
            id                  TEXT PRIMARY KEY NOT NULL,
            apns_channel_id     TEXT UNIQUE,
            storage_policy      INTEGER NOT NULL CHECK (storage_policy IN (0, 1)),
            policy              TEXT NOT NULL,
            status              TEXT NOT NULL
                                CHECK (status IN ('creating', 'active', 'ending', 'ended', 'broken', 'deleted')),
            created_at          INTEGER NOT NULL,
            updated_at          INTEGER NOT NULL,
            content_state       BLOB NOT NULL,
            last_sent_state     BLOB,
            last_sent_timestamp INTEGER,
            last_seq            INTEGER NOT NULL,
            engine_snapshot     BLOB,
            dismiss_at          INTEGER,
            ended_at            INTEGER,
            counters            TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS channels_by_status ON channels (status);
        CREATE TABLE IF NOT EXISTS events (
            channel_id  TEXT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
            seq         INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            body        BLOB NOT NULL,
            PRIMARY KEY (channel_id, seq)
        ) WITHOUT ROWID;
        """

    /// Creates the tables in a fresh database; refuses one written by a newer version.
    static func migrate(_ connection: SQLiteConnection) throws {
        let current = try connection.query("PRAGMA user_version") { $0.int64(at: 0) }.first ?? 0
        if current == version { return }
        guard current == 0 else {
            throw SQLiteError(code: SQLITE_ERROR, message: "\(connection.path) has schema version \(current); this build knows \(version)",
                              statement: "PRAGMA user_version")
        }
        try connection.transaction {
            try connection.execute(statements)
            try connection.execute("PRAGMA user_version = \(version)")
        }
    }
}
