import Synchronization
import TouchlineRuntime

/// Snapshots of the file's copy of the token registry (``RegistrySnapshot``): read in one
/// transaction with the registry log sequence it holds, and restored in one transaction that
/// replaces the registry's tables (or, from a file image, the whole file) and records the
/// snapshot's sequence, so a copy is always the log's state at one sequence, never a mix.
extension StoreWriter {
    /// Reads the registry's tables and the sequence they hold, behind the writes queued before,
    /// as `layout`. The whole copy is held in memory while it is logged (docs/scale-out.md sizes
    /// it). `rules` says which tables: a partition's holds its user directory too. A file image
    /// is the whole file: only a registry partition's file is nothing but its registry.
    public func readRegistrySnapshot(rules: RegistryRules = .whole, layout: RegistrySnapshot.Layout = .rows,
                                     completion: @escaping @Sendable (Result<RegistrySnapshot, StoreError>) -> Void) {
        guard layout == .rows || rules == .partition else { return completion(.failure(Self.imageOfAWholeCopy)) }
        let snapshot = Mutex<RegistrySnapshot?>(nil)
        enqueue(Job(apply: { db in
            let sequence = try Self.registryLogSequence(on: db)
            var writer = RegistrySnapshot.writer(layout, at: sequence)
            guard layout == .rows else {
                writer.raw(try db.image())
                return snapshot.withLock { $0 = RegistrySnapshot(layout: layout, sequence: sequence, bytes: writer.bytes) }
            }
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
            snapshot.withLock { $0 = RegistrySnapshot(layout: layout, sequence: sequence, bytes: writer.bytes) }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(snapshot.withLock { $0! }))
        }))
    }

    /// Replaces the registry's tables with `snapshot`'s rows (or, from a file image, the whole
    /// file) and records its sequence, if the file holds an earlier one; true when it did. A
    /// snapshot whose tables or columns are not this build's is refused, naming them, and
    /// changes nothing.
    public func restoreRegistrySnapshot(_ snapshot: RegistrySnapshot, rules: RegistryRules = .whole,
                                        completion: @escaping @Sendable (Result<Bool, StoreError>) -> Void) {
        if snapshot.layout == .fileImage {
            guard rules == .partition else { return completion(.failure(Self.imageOfAWholeCopy)) }
            return restoreRegistryImage(snapshot, completion: completion)
        }
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
            for table in tables {
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

    /// Replaces the whole file with the image's pages (``SQLiteConnection/replaceContents(with:)``),
    /// alone between group transactions (SQLite copies into a file outside any transaction), if
    /// the file holds an earlier sequence. The image is checked first: its registry log sequence
    /// must be the snapshot's, and its schema one this build reads (an older one is brought up
    /// to date after the copy, in its own transaction; the file holds nothing else until its
    /// takeover ends). Anything else refuses it, naming why, and changes nothing.
    private func restoreRegistryImage(_ snapshot: RegistrySnapshot, completion: @escaping @Sendable (Result<Bool, StoreError>) -> Void) {
        let restored = Mutex(false)
        var job = Job(apply: { db in
            guard try Self.registryLogSequence(on: db) < snapshot.sequence else { return }
            let image = try Self.checkedImage(of: snapshot)
            defer { image.close() }
            try db.replaceContents(with: image)
            try SQLiteSchema.migrate(db)
            restored.withLock { $0 = true }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(restored.withLock { $0 }))
        })
        job.outsideTransaction = true
        enqueue(job)
    }

    /// The snapshot's file image, opened in memory, once it shows itself whole and this build's:
    /// the snapshot's sequence, a schema version this build knows, SQLite's quick check passed.
    /// Otherwise refused, naming why (an image is input: it never marks the store as failing).
    private static func checkedImage(of snapshot: RegistrySnapshot) throws -> SQLiteConnection {
        let name = "the token registry snapshot at sequence \(snapshot.sequence)"
        let image: SQLiteConnection
        do {
            image = try SQLiteConnection.opening(image: try snapshot.databaseImage())
        } catch {
            throw StoreError.refused("\(name) cannot be opened as a file: \(error)")
        }
        do {
            let schema = try image.query("PRAGMA user_version") { $0.int64(at: 0) }.first ?? 0
            guard schema <= SQLiteSchema.version else {
                throw StoreError.refused("\(name) has schema version \(schema); this build knows \(SQLiteSchema.version)")
            }
            let held = try registryLogSequence(on: image)
            guard held == snapshot.sequence else { throw StoreError.refused("\(name) holds a file at sequence \(held)") }
            let findings = try image.query("PRAGMA quick_check(5)") { $0.text(at: 0) ?? "" }
            guard findings == ["ok"] else { throw StoreError.refused("\(name) failed its integrity check: \(findings.joined(separator: "; "))") }
            return image
        } catch let refusal as StoreError {
            image.close()
            throw refusal
        } catch {
            image.close()
            throw StoreError.refused("\(name) cannot be read as a file: \(error)")
        }
    }

    /// Why a whole copy is neither read nor restored as a file image.
    static let imageOfAWholeCopy = StoreError.refused("a file image holds a whole file: only a registry partition's file is its registry alone")

    /// SQLite's page cache while a snapshot is restored (KiB; the connection's own, 2 MB by
    /// default, otherwise): a restore touches every page of the tables it fills.
    static let restoreCacheKiB = 64 * 1_024

    /// The table's columns in their order.
    private static func columns(of table: String, on db: SQLiteConnection) throws -> [String] {
        try db.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]) { $0.text(at: 0) ?? "" }
    }
}
