import Synchronization
import TouchlineRuntime

/// Snapshots of the file's copy of the token registry (``RegistrySnapshot``, ``RegistryImageFile``):
/// read in one transaction (or between two) with the registry log sequence it holds, and restored
/// in one transaction that replaces the registry's tables (or, from a file image, the whole file)
/// and records the snapshot's sequence, so a copy is always the log's state at one sequence,
/// never a mix.
extension StoreWriter {
    /// Reads the registry's tables and the sequence they hold, behind the writes queued before,
    /// as rows. The whole copy is held in memory while it is logged (docs/scale-out.md sizes
    /// it). `rules` says which tables: a partition's holds its user directory too.
    public func readRegistrySnapshot(rules: RegistryRules = .whole,
                                     completion: @escaping @Sendable (Result<RegistrySnapshot, StoreError>) -> Void) {
        let snapshot = Mutex<RegistrySnapshot?>(nil)
        enqueue(Job(apply: { db in
            let sequence = try Self.registryLogSequence(on: db)
            var writer = RegistrySnapshot.writer(.rows, at: sequence)
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
            snapshot.withLock { $0 = RegistrySnapshot(layout: .rows, sequence: sequence, bytes: writer.bytes) }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(snapshot.withLock { $0! }))
        }))
    }

    /// Writes the file's image to a new file at `path` (``SQLiteConnection/copyImage(toFile:)``),
    /// with the registry log sequence it holds, behind the writes queued before and alone between
    /// group transactions (its last committed state). A file image is the whole file: only a
    /// registry partition's file (`rules` `.partition`) is nothing but its registry.
    public func writeRegistryImage(rules: RegistryRules, to path: String,
                                   completion: @escaping @Sendable (Result<RegistryImageFile, StoreError>) -> Void) {
        guard rules == .partition else { return completion(.failure(Self.imageOfAWholeCopy)) }
        let image = Mutex<RegistryImageFile?>(nil)
        var job = Job(apply: { db in
            let sequence = try Self.registryLogSequence(on: db)
            try db.copyImage(toFile: path)
            image.withLock { $0 = RegistryImageFile(sequence: sequence, path: path) }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(image.withLock { $0! }))
        })
        job.outsideTransaction = true
        enqueue(job)
    }

    /// Replaces the registry's tables with `snapshot`'s rows and records its sequence, if the file
    /// holds an earlier one; true when it did. A snapshot whose tables or columns are not this
    /// build's is refused, naming them, and changes nothing.
    public func restoreRegistrySnapshot(_ snapshot: RegistrySnapshot, rules: RegistryRules = .whole,
                                        completion: @escaping @Sendable (Result<Bool, StoreError>) -> Void) {
        guard snapshot.layout == .rows else {
            return completion(.failure(.refused("a registry file image is restored from its file (restoreRegistryImage), not from bytes")))
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
            let cacheSize = try db.query("PRAGMA cache_size") { $0.int64(at: 0) }.first ?? -Int64(Self.defaultCacheKiB)
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
    /// the file holds an earlier sequence; true when it did. The image is checked first: its
    /// registry log sequence must be the snapshot's, and its schema one this build reads (an
    /// older one is brought up to date after the copy, in its own transaction; the file holds
    /// nothing else until its takeover ends). Anything else refuses it, naming why, and changes
    /// nothing. Only a registry partition's file (`rules` `.partition`) takes an image.
    public func restoreRegistryImage(_ file: RegistryImageFile, rules: RegistryRules,
                                     completion: @escaping @Sendable (Result<Bool, StoreError>) -> Void) {
        guard rules == .partition else { return completion(.failure(Self.imageOfAWholeCopy)) }
        let restored = Mutex(false)
        var job = Job(apply: { db in
            guard try Self.registryLogSequence(on: db) < file.sequence else { return }
            let image = try Self.checkedImage(file)
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

    /// The image in `file`, opened, once it shows itself whole and this build's: the snapshot's
    /// sequence, a schema version this build knows, SQLite's quick check passed. Otherwise
    /// refused, naming why (an image is input: it never marks the store as failing).
    private static func checkedImage(_ file: RegistryImageFile) throws -> SQLiteConnection {
        let name = "the token registry snapshot at sequence \(file.sequence)"
        let image: SQLiteConnection
        do {
            image = try SQLiteConnection.openingImage(file: file.path)
        } catch {
            throw StoreError.refused("\(name) cannot be opened as a file: \(error)")
        }
        do {
            let schema = try image.query("PRAGMA user_version") { $0.int64(at: 0) }.first ?? 0
            guard schema <= SQLiteSchema.version else {
                throw StoreError.refused("\(name) has schema version \(schema); this build knows \(SQLiteSchema.version)")
            }
            let held = try registryLogSequence(on: image)
            guard held == file.sequence else { throw StoreError.refused("\(name) holds a file at sequence \(held)") }
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
    /// SQLite's own page cache size (KiB), which the files keep otherwise.
    static let defaultCacheKiB = 2_000

    /// The table's columns in their order.
    private static func columns(of table: String, on db: SQLiteConnection) throws -> [String] {
        try db.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]) { $0.text(at: 0) ?? "" }
    }
}
