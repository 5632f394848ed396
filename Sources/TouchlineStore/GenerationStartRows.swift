import CSQLite
import TouchlineCore
import TouchlineRuntime

/// The devices started into each APNs channel (`device_starts`): one row per channel and token,
/// keyed by the channel's 64-bit FNV-1a key, the token's head (its first 16 hex digits, ordered
/// as the tokens are) and the token's own FNV-1a key, about 28 bytes a start rather than the
/// token's 100 to 200.
///
/// The head is there for the writes. A kickoff starts its audience in token order, so with the
/// head first a save's rows land after the channel's earlier ones, on a few pages; keyed by a
/// hash alone, each save of thousands of starts touched pages all over the table (about ten
/// times the CPU for a million starts, and the pages' copies in the log). Devices' tokens are
/// random bytes, so their heads spread; tokens sharing a head (made up ones) fall back to the
/// hash's order, as before. Two tokens of one channel share head and key with a chance of
/// about n²/2^65 (one in 36 million for a million followers); the one that loses is left out
/// of that start.
///
/// `generation_starts` (schema version 11) holds keys without the head. Written no more, it is
/// still read and deleted with its channels, which end within a match.
enum GenerationStartRows {
    /// The key of a channel id or a token (tokens lowercased, as the registry keeps them).
    static func key(_ text: String) -> Int64 {
        if let hash = text.utf8.withContiguousStorageIfAvailable(fnv1aOfASCIILowercased) ?? nil { return hash }
        return Int64(bitPattern: text.lowercased().utf8.reduce(fnvOffset) { ($0 ^ UInt64($1)) &* fnvPrime })
    }

    /// The token's first 16 hex digits as a number, ordered as the tokens are (a missing or
    /// non-hex digit counts as 0: such tokens are never sent, so never started).
    static func head(_ token: String) -> Int64 {
        let value = token.utf8.withContiguousStorageIfAvailable(headValue) ?? Array(token.utf8).withUnsafeBufferPointer(headValue)
        // SQLite compares signed integers: flipping the top bit keeps the order.
        return Int64(bitPattern: value ^ (1 << 63))
    }

    /// One statement for a save's starts (head and key of each as one JSON array), not one per
    /// token: a statement's round trip through the wrapper costs more than SQLite's insert (bound
    /// and stepped per row, a kickoff's gateway spent 2 to 7 µs more a push). The rows go in
    /// ascending, so that they enter the table's key order in one pass.
    static func record(_ tokens: [String], into channel: String, on db: SQLiteConnection) throws {
        guard !tokens.isEmpty else { return }
        let rows = tokens.map { (head: head($0), key: key($0)) }.sorted { ($0.head, $0.key) < ($1.head, $1.key) }
        try db.run("""
            INSERT INTO device_starts (channel_key, token_head, token_key) SELECT ?1, value->>0, value->>1 FROM json_each(?2) WHERE true
            ON CONFLICT DO NOTHING
            """, [.integer(key(channel)), .text(pairsJSON(rows))])
    }

    static func forget(_ channel: String, on db: SQLiteConnection) throws {
        try db.run("DELETE FROM device_starts WHERE channel_key = ?", [.integer(key(channel))])
        try db.run("DELETE FROM generation_starts WHERE channel_key = ?", [.integer(key(channel))])
    }

    /// `[[head,key],...]`, written as bytes: a save carries thousands.
    static func pairsJSON(_ rows: [(head: Int64, key: Int64)]) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(rows.count * 44 + 2)
        for (index, row) in rows.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "["))
            appendDecimal(row.head, to: &bytes)
            bytes.append(UInt8(ascii: ","))
            appendDecimal(row.key, to: &bytes)
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The value's decimal digits, without making a string (20 digits do not fit a small one).
    private static func appendDecimal(_ value: Int64, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            repeat {
                digits[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(digits[index]) }
        }
    }

    private static let fnvOffset: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let fnvPrime: UInt64 = 0x100_0000_01b3

    /// FNV-1a over the bytes with A–Z folded to a–z, as `lowercased()` would give; nil for
    /// text beyond ASCII, which `lowercased()` folds by Unicode's rules.
    private static func fnv1aOfASCIILowercased(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var hash = fnvOffset
        for byte in bytes {
            guard byte < 0x80 else { return nil }
            let folded = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
            hash = (hash ^ UInt64(folded)) &* fnvPrime
        }
        return Int64(bitPattern: hash)
    }

    private static func headValue(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<16 { value = value << 4 | UInt64(index < bytes.count ? hexValue(bytes[index]) : 0) }
        return value
    }

    private static func hexValue(_ byte: UInt8) -> UInt8 {
        if byte &- UInt8(ascii: "0") < 10 { return byte &- UInt8(ascii: "0") }
        let folded = byte | 0x20
        if folded &- UInt8(ascii: "a") < 6 { return folded &- UInt8(ascii: "a") + 10 }
        return 0
    }
}

extension SQLiteTokenReader {
    public func hasStarts(into channel: String) throws(StoreError) -> Bool {
        try StoreError.wrapping {
            try connection.query("""
                SELECT EXISTS (SELECT 1 FROM device_starts WHERE channel_key = ?1) OR EXISTS (SELECT 1 FROM generation_starts WHERE channel_key = ?1)
                """, [.integer(GenerationStartRows.key(channel))]) { $0.int64(at: 0) != 0 }.first ?? false
        }
    }

    /// Each token is looked up by its position in one JSON array of heads and keys, in the
    /// record and in the version-11 one.
    public func startedTokens(among tokens: [String], into channel: String) throws(StoreError) -> Set<String> {
        guard !tokens.isEmpty else { return [] }
        let pairs = GenerationStartRows.pairsJSON(tokens.map { (head: GenerationStartRows.head($0), key: GenerationStartRows.key($0)) })
        return try StoreError.wrapping {
            Set(try connection.query("""
                SELECT j.key FROM json_each(?2) j
                WHERE EXISTS (SELECT 1 FROM device_starts d WHERE d.channel_key = ?1 AND d.token_head = j.value->>0 AND d.token_key = j.value->>1)
                    OR EXISTS (SELECT 1 FROM generation_starts g WHERE g.channel_key = ?1 AND g.token_key = j.value->>1)
                """, [.integer(GenerationStartRows.key(channel)), .text(pairs)]) { row in
                let index = Int(row.int64(at: 0))
                guard tokens.indices.contains(index) else {
                    throw SQLiteError(code: SQLITE_CORRUPT, message: "a started token's position \(index) is outside the \(tokens.count) asked about",
                                      statement: nil)
                }
                return tokens[index]
            })
        }
    }
}
