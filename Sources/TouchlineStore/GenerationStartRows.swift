import TouchlineCore
import TouchlineRuntime

/// The devices started into each APNs channel: one row per channel and token, both as 64-bit
/// FNV-1a keys, so a match's million followers cost about 20 bytes each rather than their
/// tokens' 100 to 200 (two tokens of one channel share a key with a chance of about n²/2^65:
/// one in 36 million for a million followers; the one that loses is left out of that start).
enum GenerationStartRows {
    /// The key of a channel id or a token (tokens lowercased, as the registry keeps them).
    static func key(_ text: String) -> Int64 {
        Int64(bitPattern: text.lowercased().utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 })
    }

    /// One statement for a save's starts (their keys as one JSON array), not one per token: a
    /// kickoff records a row per follower, and a statement's round trip through the wrapper cost
    /// more than SQLite's insert itself. The keys go in ascending, so that a save's rows enter
    /// the table's key order in one pass rather than all over it.
    static func record(_ tokens: [String], into channel: String, on db: SQLiteConnection) throws {
        guard !tokens.isEmpty else { return }
        let keys = String(decoding: JSONValue.array(tokens.map { key($0) }.sorted().map { .integer($0) }).encoded, as: UTF8.self)
        try db.run("""
            INSERT INTO generation_starts (channel_key, token_key) SELECT ?, value FROM json_each(?) WHERE true ON CONFLICT DO NOTHING
            """, [.integer(key(channel)), .text(keys)])
    }

    static func forget(_ channel: String, on db: SQLiteConnection) throws {
        try db.run("DELETE FROM generation_starts WHERE channel_key = ?", [.integer(key(channel))])
    }
}

extension SQLiteTokenReader {
    public func hasStarts(into channel: String) throws(StoreError) -> Bool {
        try StoreError.wrapping {
            !(try connection.query("SELECT 1 FROM generation_starts WHERE channel_key = ? LIMIT 1",
                                   [.integer(GenerationStartRows.key(channel))]) { _ in true }).isEmpty
        }
    }

    public func startedTokens(among tokens: [String], into channel: String) throws(StoreError) -> Set<String> {
        guard !tokens.isEmpty else { return [] }
        let byKey = Dictionary(tokens.map { (GenerationStartRows.key($0), $0) }, uniquingKeysWith: { first, _ in first })
        let keys = String(decoding: JSONValue.array(byKey.keys.map { .integer($0) }).encoded, as: UTF8.self)
        return try StoreError.wrapping {
            Set(try connection.query("""
                SELECT token_key FROM generation_starts WHERE channel_key = ? AND token_key IN (SELECT value FROM json_each(?))
                """, [.integer(GenerationStartRows.key(channel)), .text(keys)]) { byKey[$0.int64(at: 0)] ?? "" })
        }
    }
}
