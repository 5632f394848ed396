import CSQLite
import TouchlineRuntime

/// The store's tables, versioned with `PRAGMA user_version`. See docs/storage.md.
enum SQLiteSchema {
    static let version: Int64 = 14

    /// Version 1: channels and their event log.
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

    /// Version 2: the token registry, personal jobs and dead letters (docs/storage.md, "Tokens and personal jobs").
    static let tokenStatements = """
        CREATE TABLE IF NOT EXISTS tokens (
            token          TEXT PRIMARY KEY NOT NULL,
            kind           TEXT NOT NULL CHECK (kind IN ('update', 'pushToStart')),
            channel_id     TEXT,
            user_id        TEXT,
            environment    TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
            registered_at  INTEGER NOT NULL,
            active         INTEGER NOT NULL CHECK (active IN (0, 1)),
            deactivated_at INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS tokens_by_user ON tokens (user_id, kind) WHERE user_id IS NOT NULL;
        CREATE INDEX IF NOT EXISTS tokens_by_activity ON tokens (channel_id, user_id) WHERE kind = 'update';
        CREATE TABLE IF NOT EXISTS token_follows (
            follow TEXT NOT NULL,
            token  TEXT NOT NULL REFERENCES tokens (token) ON DELETE CASCADE,
            PRIMARY KEY (follow, token)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS token_follows_by_token ON token_follows (token);
        CREATE TABLE IF NOT EXISTS personal_jobs (
            id         TEXT PRIMARY KEY NOT NULL,
            created_at INTEGER NOT NULL,
            audience   TEXT NOT NULL,
            payload    BLOB NOT NULL,
            priority   INTEGER NOT NULL,
            expiration INTEGER,
            status     TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done')),
            cursor     TEXT,
            targeted   INTEGER NOT NULL,
            sent       INTEGER NOT NULL,
            failed     TEXT NOT NULL,
            expired    INTEGER NOT NULL,
            pending    INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS personal_jobs_by_status ON personal_jobs (status, created_at);
        CREATE TABLE IF NOT EXISTS personal_targets (
            job_id   TEXT NOT NULL REFERENCES personal_jobs (id) ON DELETE CASCADE,
            token    TEXT NOT NULL,
            state    TEXT NOT NULL CHECK (state IN ('retry', 'deadLettered')),
            attempts INTEGER NOT NULL,
            retry_at INTEGER,
            PRIMARY KEY (job_id, token)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS personal_targets_due ON personal_targets (job_id, state, retry_at);
        CREATE TABLE IF NOT EXISTS dead_letters (
            id     INTEGER PRIMARY KEY,
            job_id TEXT NOT NULL,
            token  TEXT NOT NULL,
            reason TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('dead', 'replayed')),
            at     INTEGER NOT NULL,
            UNIQUE (job_id, token)
        );
        CREATE INDEX IF NOT EXISTS dead_letters_by_status ON dead_letters (status, id);
        """

    /// Version 3: a job's progress also lists the tokens after its cursor that already ended,
    /// so a resumed fan-out skips them (docs/personal-pushes.md, "Restart").
    static let resumeStatements = """
        ALTER TABLE personal_jobs ADD COLUMN ended_after_cursor TEXT NOT NULL DEFAULT '[]';
        """

    /// Version 4: one row the writer rewrites to find out whether a failing disk takes writes again.
    static let probeStatements = """
        CREATE TABLE IF NOT EXISTS store_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
        """

    /// Version 5: the webhook outbox (docs/storage.md, "Webhook outbox"): events in commit order
    /// (`AUTOINCREMENT`, so an id is never reused after pruning and the pull cursor only moves
    /// forward) and each endpoint's delivery of each event.
    static let webhookStatements = """
        CREATE TABLE IF NOT EXISTS webhook_outbox (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            event_id   TEXT NOT NULL UNIQUE,
            type       TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            body       BLOB NOT NULL
        );
        CREATE INDEX IF NOT EXISTS webhook_outbox_by_age ON webhook_outbox (created_at);
        CREATE TABLE IF NOT EXISTS webhook_deliveries (
            endpoint  TEXT NOT NULL,
            outbox_id INTEGER NOT NULL REFERENCES webhook_outbox (id) ON DELETE CASCADE,
            attempts  INTEGER NOT NULL,
            next_at   INTEGER NOT NULL,
            status    TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
            PRIMARY KEY (endpoint, outbox_id)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, endpoint, next_at);
        CREATE INDEX IF NOT EXISTS webhook_deliveries_by_event ON webhook_deliveries (outbox_id);
        """

    /// Version 6: the `Idempotency-Key`s of requests that created personal jobs, with a digest of
    /// the request and the answer it got, until they expire (docs/storage.md, "Idempotency keys").
    static let idempotencyStatements = """
        CREATE TABLE IF NOT EXISTS idempotency_keys (
            scope        TEXT NOT NULL,
            route        TEXT NOT NULL,
            key          TEXT NOT NULL,
            request_hash BLOB NOT NULL,
            status       INTEGER NOT NULL,
            response     BLOB NOT NULL,
            created_at   INTEGER NOT NULL,
            expires_at   INTEGER NOT NULL,
            PRIMARY KEY (scope, route, key)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at);
        """

    /// Version 7: how far the token registry of this file follows a shared registry log (the
    /// JetStream backend's; docs/cluster.md, "The shared token registry"): the log sequence of
    /// the last entry applied, written in the same transaction as the entry.
    static let registryLogStatements = """
        CREATE TABLE IF NOT EXISTS registry_log (id INTEGER PRIMARY KEY CHECK (id = 1), sequence INTEGER NOT NULL);
        """

    /// Version 8: a job may wait for a time (a scheduled kickoff, docs/personal-pushes.md).
    static let scheduledStartStatements = """
        ALTER TABLE personal_jobs ADD COLUMN start_at INTEGER;
        """

    /// Version 9: a token belongs to an app (docs/configuration.md, "Several apps"); those
    /// registered before are the `default` app's.
    static let tokenAppStatements = """
        ALTER TABLE tokens ADD COLUMN app TEXT NOT NULL DEFAULT 'default';
        """

    /// Version 10: a personal job belongs to an app; those stored before are the `default` app's.
    static let jobAppStatements = """
        ALTER TABLE personal_jobs ADD COLUMN app TEXT NOT NULL DEFAULT 'default';
        """

    /// Version 11: the devices started into each APNs channel (a generation of a match), so
    /// that no device is started twice into one (docs/personal-pushes.md, "One start per
    /// device and generation"); 64-bit keys of the channel id and the token (``GenerationStartRows``).
    static let generationStartStatements = """
        CREATE TABLE IF NOT EXISTS generation_starts (
            channel_key INTEGER NOT NULL,
            token_key   INTEGER NOT NULL,
            PRIMARY KEY (channel_key, token_key)
        ) WITHOUT ROWID;
        """

    /// Version 12: a partition of a partitioned registry (docs/cluster.md, "The partitioned token
    /// registry"): the user directory of the users placed in it, the replacements it decided and
    /// has yet to log to the replaced tokens' partitions, and the replacements its own tokens
    /// received (``UserDirectoryRows``). Empty in every other file.
    static let userDirectoryStatements = """
        CREATE TABLE IF NOT EXISTS user_tokens (
            user_id       TEXT NOT NULL,
            grouping      TEXT NOT NULL,
            token         TEXT NOT NULL,
            app           TEXT NOT NULL,
            registered_at INTEGER NOT NULL,
            superseded_at INTEGER,
            PRIMARY KEY (user_id, grouping, token)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS token_supersessions (
            user_id           TEXT NOT NULL,
            grouping          TEXT NOT NULL,
            token             TEXT NOT NULL,
            app               TEXT NOT NULL,
            registered_before INTEGER NOT NULL,
            PRIMARY KEY (user_id, grouping, token)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS token_replacements (
            token             TEXT NOT NULL,
            user_id           TEXT NOT NULL,
            grouping          TEXT NOT NULL,
            registered_before INTEGER NOT NULL,
            PRIMARY KEY (token, user_id, grouping)
        ) WITHOUT ROWID;
        """

    /// Version 13: the devices started into each APNs channel keyed in their tokens' order
    /// (``GenerationStartRows``); version 11's table is read and emptied, no longer written.
    static let deviceStartStatements = """
        CREATE TABLE IF NOT EXISTS device_starts (
            channel_key INTEGER NOT NULL,
            token_head  INTEGER NOT NULL,
            token_key   INTEGER NOT NULL,
            PRIMARY KEY (channel_key, token_head, token_key)
        ) WITHOUT ROWID;
        """

    /// Version 14: each save's started devices as one sorted run (``DeviceStartRun``) rather than
    /// a row each; version 13's rows are read and emptied, no longer written.
    static let deviceStartRunStatements = """
        CREATE TABLE IF NOT EXISTS device_start_runs (
            channel_key INTEGER NOT NULL,
            first_head  INTEGER NOT NULL,
            last_head   INTEGER NOT NULL,
            starts      BLOB NOT NULL
        );
        CREATE INDEX IF NOT EXISTS device_start_runs_by_channel ON device_start_runs (channel_key, first_head, last_head);
        """

    /// What each version adds, applied in order from the database's version.
    static let steps: [(version: Int64, statements: String)] = [(1, statements), (2, tokenStatements), (3, resumeStatements),
                                                                 (4, probeStatements), (5, webhookStatements),
                                                                 (6, idempotencyStatements),
                                                                 (7, registryLogStatements), (8, scheduledStartStatements),
                                                                 (9, tokenAppStatements), (10, jobAppStatements),
                                                                 (11, generationStartStatements), (12, userDirectoryStatements),
                                                                 (13, deviceStartStatements), (14, deviceStartRunStatements)]

    /// Creates the tables in a fresh database or adds those of later versions to an older one;
    /// refuses one written by a newer version.
    static func migrate(_ connection: SQLiteConnection) throws {
        let current = try connection.query("PRAGMA user_version") { $0.int64(at: 0) }.first ?? 0
        if current == version { return }
        guard current < version else {
            throw SQLiteError(code: SQLITE_ERROR, message: "\(connection.path) has schema version \(current); this build knows \(version)",
                              statement: "PRAGMA user_version")
        }
        try connection.transaction {
            for step in steps where step.version > current { try connection.execute(step.statements) }
            try connection.execute("PRAGMA user_version = \(version)")
        }
    }
}
