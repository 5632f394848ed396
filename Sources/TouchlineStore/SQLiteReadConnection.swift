import TouchlineRuntime

extension SQLiteConnection {
    /// A connection of a reader of its own (channels, tokens, the webhook outbox): `query_only`,
    /// so a bug in a reader can never write, and WAL lets it read while the writer commits.
    static func openForReading(path: String) throws(StoreError) -> SQLiteConnection {
        try StoreError.wrapping {
            let connection = try SQLiteConnection(path: path)
            try connection.execute("PRAGMA query_only = ON")
            return connection
        }
    }
}
