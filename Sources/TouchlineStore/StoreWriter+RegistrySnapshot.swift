import Synchronization
import TouchlineRuntime

/// Snapshots of the file's copy of a shared token registry (``RegistrySnapshot``): read in one
/// transaction with the registry log sequence it holds, and restored in one transaction that
/// replaces the registry's tables and records the snapshot's sequence, so a copy is always the
/// log's state at one sequence, never a mix.
extension StoreWriter {
    /// Reads the registry's tables and the sequence they hold, behind the writes queued before.
    /// The whole copy is held in memory while it is logged (docs/scale-out.md sizes it).
    /// `rules` says which tables: a partition's holds its user directory too.
    public func readRegistrySnapshot(rules: RegistryRules = .whole, completion: @escaping @Sendable (Result<RegistrySnapshot, StoreError>) -> Void) {
        let snapshot = Mutex<RegistrySnapshot?>(nil)
        enqueue(Job(apply: { db in
            let sequence = try Self.registryLogSequence(on: db)
            var writer = RegistrySnapshot.writer(at: sequence)
            for table in RegistrySnapshot.tables(rules) {
                let columns = try Self.columns(of: table, on: db)
                writer.tableHeader(table, columns: columns)
                let statement = try db.statement("SELECT \(columns.joined(separator: ", ")) FROM \(table)")
                defer { statement.reset() }
                while try statement.step() {
                    writer.row((0..<statement.columnCount).map { statement.value(at: $0) })
                }
                writer.endOfRows()
            }
            snapshot.withLock { $0 = RegistrySnapshot(sequence: sequence, bytes: writer.bytes) }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(snapshot.withLock { $0! }))
        }))
    }

    /// Replaces the registry's tables with `snapshot`'s rows and records its sequence, if the
    /// file holds an earlier one; true when it did. A snapshot whose tables or columns are not
    /// this build's is refused, naming them, and changes nothing.
    public func restoreRegistrySnapshot(_ snapshot: RegistrySnapshot, rules: RegistryRules = .whole,
                                        completion: @escaping @Sendable (Result<Bool, StoreError>) -> Void) {
        let restored = Mutex(false)
        enqueue(Job(apply: { db in
            guard try Self.registryLogSequence(on: db) < snapshot.sequence else { return }
            let tables = RegistrySnapshot.tables(rules)
            for table in tables.reversed() { try db.run("DELETE FROM \(table)") }
            // A bulk load: the tables' own indexes are built once after their rows (a sort)
            // rather than kept up to date row by row, and the pages it touches stay cached.
            let indexes = try db.query("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (\(tables.map { "'\($0)'" }.joined(separator: ", ")))") {
                (name: $0.text(at: 0) ?? "", sql: $0.text(at: 1) ?? "")
            }
            for index in indexes { try db.run("DROP INDEX \(index.name)") }
            let cacheSize = try db.query("PRAGMA cache_size") { $0.int64(at: 0) }.first ?? -2_000
            try db.execute("PRAGMA cache_size = -\(Self.restoreCacheKiB)")
            // Setting the cache's size back cannot fail on an open connection.
            defer { try? db.execute("PRAGMA cache_size = \(cacheSize)") }
            var reader = BinaryRecordReader(snapshot.bytes)
            _ = try RegistrySnapshot.header(&reader)
            for table in RegistrySnapshot.tables(rules) {
                let (name, columns) = try reader.tableHeader()
                let expected = try Self.columns(of: table, on: db)
                guard name == table, columns == expected else {
                    throw StoreError.refused("the token registry snapshot holds \(name) (\(columns.joined(separator: ", "))) where this build has \(table) (\(expected.joined(separator: ", ")))")
                }
                let insert = try db.statement("INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
                while let row = try reader.row(width: columns.count) {
                    insert.reset()
                    try insert.bind(row)
                    _ = try insert.step()
                }
            }
            guard reader.isAtEnd else { throw reader.damaged("bytes after the last table") }
            for index in indexes { try db.run(index.sql) }
            try Self.recordRegistryLogSequence(snapshot.sequence, on: db)
            restored.withLock { $0 = true }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(restored.withLock { $0 }))
        }))
    }

    /// SQLite's page cache while a snapshot is restored (KiB; the connection's own, 2 MB by
    /// default, otherwise): a restore touches every page of the tables it fills.
    static let restoreCacheKiB = 64 * 1_024

    /// The table's columns in their order.
    private static func columns(of table: String, on db: SQLiteConnection) throws -> [String] {
        try db.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]) { $0.text(at: 0) ?? "" }
    }
}
