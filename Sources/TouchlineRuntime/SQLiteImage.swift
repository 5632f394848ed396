import CSQLite

/// A database as bytes, and back: what a takeover of a token registry partition ships instead of
/// its rows (docs/cluster.md, "The partitioned token registry"). Copying pages costs no inserts,
/// no index builds and no second pass through the write-ahead log's rows: a partition restored
/// from rows spent most of its takeover inserting them (docs/benchmarks.md).
extension SQLiteConnection {
    /// The database's image: every page as this connection reads it now (through the write-ahead
    /// log), header first, in the file format's layout. Inside a transaction, the transaction's view.
    public func image() throws -> [UInt8] {
        let db = try open()
        var size: sqlite3_int64 = 0
        guard let bytes = sqlite3_serialize(db, "main", &size, 0) else {
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: "\(path) could not be read as an image (out of memory?)",
                              statement: nil)
        }
        defer { sqlite3_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(size)))
    }

    /// A read-only connection on a database held in memory, copied from `image`. A damaged image
    /// is refused when read (SQLite checks every page it reads), never trusted blindly.
    public static func opening(image: ArraySlice<UInt8>) throws -> SQLiteConnection {
        let name = "a database image of \(image.count) bytes"
        guard image.count >= headerBytes, image.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw SQLiteError(code: SQLITE_NOTADB, message: "\(name) does not start with SQLite's header", statement: nil)
        }
        var db: OpaquePointer?
        let opened = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard opened == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw SQLiteError(code: opened, message: "cannot open a database in memory for \(name)", statement: nil)
        }
        guard let buffer = sqlite3_malloc64(UInt64(image.count))?.assumingMemoryBound(to: UInt8.self) else {
            sqlite3_close_v2(db)
            throw SQLiteError(code: SQLITE_NOMEM, message: "no memory for \(name)", statement: nil)
        }
        image.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: image.count) }
        // Bytes 18 and 19 say the file uses a write-ahead log, which a database in memory cannot
        // open; as a rollback-journal database it reads the same pages.
        (buffer[18], buffer[19]) = (1, 1)
        // SQLite owns the buffer from here, and frees it also when this call fails.
        let flags = UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY)
        let loaded = sqlite3_deserialize(db, "main", buffer, sqlite3_int64(image.count), sqlite3_int64(image.count), flags)
        guard loaded == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_close_v2(db)
            throw SQLiteError(code: loaded, message: "\(name) could not be loaded: \(message)", statement: nil)
        }
        let connection = SQLiteConnection(handle: db, path: name)
        let pageSize = try connection.query("PRAGMA page_size") { $0.int64(at: 0) }.first ?? 0
        let pages = try connection.query("PRAGMA page_count") { $0.int64(at: 0) }.first ?? 0
        guard pageSize > 0, pageSize * pages == image.count else {
            throw SQLiteError(code: SQLITE_CORRUPT, message: "\(name) holds \(pages) pages of \(pageSize) bytes", statement: nil)
        }
        return connection
    }

    /// Replaces this whole database (schema and rows) with `source`'s, in one transaction through
    /// SQLite's online backup: a failure leaves it as it was. Call it outside any transaction of
    /// this connection, with no statement of it running (SQLite refuses otherwise).
    public func replaceContents(with source: SQLiteConnection) throws {
        let db = try open()
        let from = try source.open()
        let pageSizes = (try query("PRAGMA page_size") { $0.int64(at: 0) }.first ?? 0,
                         try source.query("PRAGMA page_size") { $0.int64(at: 0) }.first ?? 0)
        guard pageSizes.0 == pageSizes.1 else {
            // A database using a write-ahead log cannot change its page size.
            throw SQLiteError(code: SQLITE_MISMATCH, message: "\(source.path) has pages of \(pageSizes.1) bytes, \(path) of \(pageSizes.0)",
                              statement: nil)
        }
        guard let backup = sqlite3_backup_init(db, "main", from, "main") else { throw error("copying \(source.path) into \(path)") }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            throw SQLiteError(code: stepped == SQLITE_DONE ? finished : stepped,
                              message: "copying \(source.path) into \(path) failed: \(String(cString: sqlite3_errstr(stepped == SQLITE_DONE ? finished : stepped)))",
                              statement: nil)
        }
    }

    /// The file format's header: 100 bytes before the first page's content.
    static let headerBytes = 100
}
