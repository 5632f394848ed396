import CSQLite
import TouchlineCore
import TouchlineRuntime

/// The devices started into each APNs channel: each start is the channel's 64-bit FNV-1a key,
/// the token's head (its first 16 hex digits, ordered as the tokens are) and the token's own
/// FNV-1a key, 16 bytes a start beside the channel rather than the token's 100 to 200.
///
/// A save's starts are written as one sorted run (`device_start_runs`, ``DeviceStartRun``). A
/// kickoff starts its audience in token order, so a save's starts span a narrow range of heads,
/// and a page of another kickoff's audience meets few runs. Devices' tokens are random bytes,
/// so their heads spread; tokens sharing a head (made up ones) are told apart by the hash. Two
/// tokens of one channel share head and key with a chance of about n²/2^65 (one in 36 million
/// for a million followers); the one that loses is left out of that start.
///
/// Rows written before an upgrade, one per start (`device_starts`, version 13) or keyed without
/// the head (`generation_starts`, version 11), are still read and deleted with their channels,
/// which end within a match; neither table is written any more.
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

    /// A save's starts as one sorted run (``DeviceStartRun``), or several when it holds more than
    /// a run takes. A start recorded twice is found all the same.
    static func record(_ tokens: [String], into channel: String, on db: SQLiteConnection) throws {
        guard !tokens.isEmpty else { return }
        let starts = tokens.map { (head: head($0), key: key($0)) }.sorted { ($0.head, $0.key) < ($1.head, $1.key) }
        for first in stride(from: 0, to: starts.count, by: DeviceStartRun.maximumStarts) {
            let run = starts[first..<min(first + DeviceStartRun.maximumStarts, starts.count)]
            try db.run("INSERT INTO device_start_runs (channel_key, first_head, last_head, starts) VALUES (?, ?, ?, ?)",
                       [.integer(key(channel)), .integer(run.first!.head), .integer(run.last!.head), .blob(DeviceStartRun.encode(run))])
        }
    }

    static func forget(_ channel: String, on db: SQLiteConnection) throws {
        try db.run("DELETE FROM device_start_runs WHERE channel_key = ?", [.integer(key(channel))])
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
                SELECT EXISTS (SELECT 1 FROM device_start_runs WHERE channel_key = ?1)
                    OR EXISTS (SELECT 1 FROM device_starts WHERE channel_key = ?1) OR EXISTS (SELECT 1 FROM generation_starts WHERE channel_key = ?1)
                """, [.integer(GenerationStartRows.key(channel))]) { $0.int64(at: 0) != 0 }.first ?? false
        }
    }

    /// The runs whose heads overlap the tokens' are searched (``DeviceStartRun``); the rows of
    /// versions 13 and 11, written before an upgrade, are looked up through one JSON array of
    /// heads and keys, by position.
    public func startedTokens(among tokens: [String], into channel: String) throws(StoreError) -> Set<String> {
        guard !tokens.isEmpty else { return [] }
        let starts = tokens.map { (head: GenerationStartRows.head($0), key: GenerationStartRows.key($0)) }
        let channelKey = GenerationStartRows.key(channel)
        return try StoreError.wrapping {
            var started = try startedInRuns(starts, tokens, channelKey: channelKey)
            started.formUnion(try startedInRows(starts, tokens, channelKey: channelKey))
            return started
        }
    }

    private func startedInRuns(_ starts: [DeviceStartRun.Start], _ tokens: [String], channelKey: Int64) throws -> Set<String> {
        let heads = starts.map(\.head)
        var started = Set<String>()
        let statement = try connection.statement("""
            SELECT starts FROM device_start_runs WHERE channel_key = ?1 AND first_head <= ?2 AND last_head >= ?3
            """)
        defer { statement.reset() }
        try statement.bind([.integer(channelKey), .integer(heads.max()!), .integer(heads.min()!)])
        while try statement.step() {
            try statement.withBlob(at: 0) { run in
                guard DeviceStartRun.isWellFormed(run) else {
                    throw SQLiteError(code: SQLITE_CORRUPT, message: "a run of started devices is \(run.count) bytes, not whole starts", statement: nil)
                }
                for (index, start) in starts.enumerated() where DeviceStartRun.contains(start, in: run) { started.insert(tokens[index]) }
            }
        }
        return started
    }

    private func startedInRows(_ starts: [DeviceStartRun.Start], _ tokens: [String], channelKey: Int64) throws -> Set<String> {
        Set(try connection.query("""
            SELECT j.key FROM json_each(?2) j
            WHERE EXISTS (SELECT 1 FROM device_starts d WHERE d.channel_key = ?1 AND d.token_head = j.value->>0 AND d.token_key = j.value->>1)
                OR EXISTS (SELECT 1 FROM generation_starts g WHERE g.channel_key = ?1 AND g.token_key = j.value->>1)
            """, [.integer(channelKey), .text(GenerationStartRows.pairsJSON(starts))]) { row in
            let index = Int(row.int64(at: 0))
            guard tokens.indices.contains(index) else {
                throw SQLiteError(code: SQLITE_CORRUPT, message: "a started token's position \(index) is outside the \(tokens.count) asked about",
                                  statement: nil)
            }
            return tokens[index]
        })
    }
}
