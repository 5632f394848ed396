import CSQLite
import Glibc

/// A database as a file image, and back: what a takeover of a token registry partition ships
/// instead of its rows (docs/cluster.md, "The partitioned token registry"). Copying pages costs no
/// inserts, no index builds and no second pass through the write-ahead log's rows: a partition
/// restored from rows spent most of its takeover inserting them (docs/benchmarks.md). The image
/// is a file, never the whole database in memory: a partition's weighs about 100 MB at 10 million
/// tokens, and a gateway taking partitions up reads several at once.
extension SQLiteConnection {
    /// Writes the database's image to a new file at `destination` (replacing any file there):
    /// every page as this connection reads it now, through SQLite's online backup, header first,
    /// in the file format's layout. Outside a transaction of this connection, the last committed
    /// state. The copy is scratch: no journal and no syncs, so a failure leaves a file to remove.
    public func copyImage(toFile destination: String) throws {
        let db = try open()
        unlink(destination)
        var target: OpaquePointer?
        let opened = sqlite3_open_v2(destination, &target, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        defer { sqlite3_close_v2(target) }
        guard opened == SQLITE_OK, let target else {
            throw SQLiteError(code: opened, message: "cannot create \(destination) for \(path)'s image", statement: nil)
        }
        let scratch = sqlite3_exec(target, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", nil, nil, nil)
        guard scratch == SQLITE_OK else {
            throw SQLiteError(code: scratch, message: "cannot set up \(destination): \(String(cString: sqlite3_errmsg(target)))", statement: nil)
        }
        try Self.backUp(from: db, named: path, into: target, named: destination)
    }

    /// A read-only connection on the image in the file at `path` (written by
    /// ``copyImage(toFile:)``, or received). Its bytes 18 and 19 are set to say it uses no
    /// write-ahead log first: an image of a database that used one would otherwise look for its
    /// log beside it. A damaged image is refused when read (SQLite checks every page it reads),
    /// never trusted blindly.
    public static func openingImage(file path: String) throws -> SQLiteConnection {
        let name = "the database image \(path)"
        let descriptor = Glibc.open(path, O_RDWR)
        guard descriptor >= 0 else { throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot open \(name): errno \(errno)", statement: nil) }
        var header = [UInt8](repeating: 0, count: headerBytes)
        let read = pread(descriptor, &header, headerBytes, 0)
        let size = lseek(descriptor, 0, SEEK_END)
        let patched = read == headerBytes && header.starts(with: Array("SQLite format 3\0".utf8)) ? pwrite(descriptor, [1, 1], 2, 18) : -1
        Glibc.close(descriptor)
        guard patched == 2 else {
            throw SQLiteError(code: SQLITE_NOTADB, message: "\(name) does not start with SQLite's header", statement: nil)
        }
        var db: OpaquePointer?
        let opened = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard opened == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw SQLiteError(code: opened, message: "cannot open \(name)", statement: nil)
        }
        let connection = SQLiteConnection(handle: db, path: name)
        do {
            let pageSize = try connection.query("PRAGMA page_size") { $0.int64(at: 0) }.first ?? 0
            let pages = try connection.query("PRAGMA page_count") { $0.int64(at: 0) }.first ?? 0
            guard pageSize > 0, pageSize * pages == Int64(size) else {
                throw SQLiteError(code: SQLITE_CORRUPT, message: "\(name) holds \(pages) pages of \(pageSize) bytes in \(size) bytes", statement: nil)
            }
        } catch {
            connection.close()
            throw error
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
        try Self.backUp(from: from, named: source.path, into: db, named: path)
    }

    /// Copies every page of `source` into `target` in one step of SQLite's online backup.
    private static func backUp(from source: OpaquePointer, named sourceName: String, into target: OpaquePointer, named targetName: String) throws {
        guard let backup = sqlite3_backup_init(target, "main", source, "main") else {
            throw SQLiteError(code: sqlite3_extended_errcode(target),
                              message: "copying \(sourceName) into \(targetName): \(String(cString: sqlite3_errmsg(target)))", statement: nil)
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            let code = stepped == SQLITE_DONE ? finished : stepped
            throw SQLiteError(code: code, message: "copying \(sourceName) into \(targetName) failed: \(String(cString: sqlite3_errstr(code)))",
                              statement: nil)
        }
    }

    /// The file format's header: 100 bytes before the first page's content.
    static let headerBytes = 100
}
