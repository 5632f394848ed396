import CSQLite

/// A failed SQLite call: the extended result code, SQLite's own message and the SQL that failed,
/// so a log line names the cause without a debugger.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The extended result code (`SQLITE_CONSTRAINT_PRIMARYKEY`, `SQLITE_BUSY`, ...).
    public let code: Int32
    public let message: String
    /// The statement being prepared or run, when there was one.
    public let statement: String?

    public init(code: Int32, message: String, statement: String?) {
        self.code = code
        self.message = message
        self.statement = statement
    }

    /// The primary result code (the low byte of the extended one).
    public var primaryCode: Int32 { code & 0xff }
    public var isConstraintViolation: Bool { primaryCode == SQLITE_CONSTRAINT }

    public var description: String {
        let location = statement.map { " in `\($0)`" } ?? ""
        return "SQLite error \(code): \(message)\(location)"
    }
}

/// A value bound to a statement parameter.
public enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null
}

/// How hard a commit pushes data to the disk (`PRAGMA synchronous`, in WAL mode).
public enum SQLiteSynchronous: String, Sendable {
    /// Commits write the WAL but do not fsync it: a committed transaction survives the process
    /// being killed (the kernel holds the written pages), not a power cut or kernel crash.
    case normal = "NORMAL"
    /// Every commit fsyncs the WAL: committed transactions also survive power loss.
    case full = "FULL"
}

/// One SQLite connection, opened in WAL mode.
///
/// **Thread confinement.** The connection is opened without SQLite's own mutex
/// (`SQLITE_OPEN_NOMUTEX`) and must be used from one thread at a time: the thread (or event loop)
/// that owns it. It is `@unchecked Sendable` only so that it can be handed to that thread.
public final class SQLiteConnection: @unchecked Sendable {
    public let path: String
    private(set) var handle: OpaquePointer?
    private var cache: [String: SQLiteStatement] = [:]

    /// Opens (creating if needed) the database at `path`, switches it to WAL, applies
    /// `synchronous`, enables foreign keys and waits up to `busyTimeoutMilliseconds` for locks.
    public init(path: String, synchronous: SQLiteSynchronous = .normal, busyTimeoutMilliseconds: Int32 = 5_000) throws {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, message: "cannot open \(path): \(message)", statement: nil)
        }
        handle = db
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        let mode = try scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw SQLiteError(code: SQLITE_ERROR, message: "\(path) refused WAL mode (got \(mode ?? "nothing"))",
                              statement: "PRAGMA journal_mode=WAL")
        }
        try execute("PRAGMA synchronous=\(synchronous.rawValue); PRAGMA foreign_keys=ON")
    }

    /// A connection on `handle`, opened elsewhere (``opening(image:)``), as it is.
    init(handle: OpaquePointer, path: String) {
        self.path = path
        self.handle = handle
    }

    deinit { close() }

    /// Finalizes every cached statement and closes the database. Further use throws.
    public func close() {
        for statement in cache.values { statement.finalize() }
        cache.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs one or more statements without parameters or results (schema, pragmas, BEGIN/COMMIT).
    public func execute(_ sql: String) throws {
        let db = try open()
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(errorMessage)
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: message, statement: sql)
        }
    }

    /// The prepared statement for `sql`, from the cache, reset and with no bindings.
    public func statement(_ sql: String) throws -> SQLiteStatement {
        if let cached = cache[sql] {
            cached.reset()
            return cached
        }
        let db = try open()
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(sql) }
        let statement = SQLiteStatement(raw, sql: sql, connection: self)
        cache[sql] = statement
        return statement
    }

    /// Runs a statement that returns no rows; returns the number of rows it changed.
    @discardableResult
    public func run(_ sql: String, _ values: [SQLiteValue] = []) throws -> Int {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() {}
        return changes
    }

    /// Runs a query and maps each row; the statement is reset afterwards so no read
    /// transaction stays open.
    public func query<T>(_ sql: String, _ values: [SQLiteValue] = [], row: (SQLiteStatement) throws -> T) throws -> [T] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var rows: [T] = []
        while try statement.step() { rows.append(try row(statement)) }
        return rows
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE`, so the write lock is taken up front and a
    /// second writer waits instead of failing halfway); commits on return, rolls back on throw.
    @discardableResult
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    private func scalarText(_ sql: String) throws -> String? {
        try query(sql) { $0.text(at: 0) }.first ?? nil
    }

    func open() throws -> OpaquePointer {
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "\(path) is closed", statement: nil) }
        return handle
    }

    /// The connection's current error, attributed to `sql`.
    func error(_ sql: String?) -> SQLiteError {
        guard let handle else { return SQLiteError(code: SQLITE_MISUSE, message: "\(path) is closed", statement: sql) }
        return SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), statement: sql)
    }
}

/// A prepared statement owned by its connection's cache; confined to the connection's thread.
public final class SQLiteStatement {
    public let sql: String
    private var raw: OpaquePointer?
    private unowned let connection: SQLiteConnection

    /// SQLite copies bound text and blobs (`SQLITE_TRANSIENT`, which does not import as a constant).
    private static let transient = unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)

    init(_ raw: OpaquePointer, sql: String, connection: SQLiteConnection) {
        self.raw = raw
        self.sql = sql
        self.connection = connection
    }

    func finalize() {
        sqlite3_finalize(raw)
        raw = nil
    }

    /// Ends the current execution (closing its implicit read transaction) and clears bindings.
    public func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    /// Binds `values` to parameters 1...n.
    public func bind(_ values: [SQLiteValue]) throws {
        for (offset, value) in values.enumerated() { try bind(value, at: Int32(offset + 1)) }
    }

    /// Binds one value to the 1-based parameter `index`.
    public func bind(_ value: SQLiteValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .integer(let v): rc = sqlite3_bind_int64(raw, index, v)
        case .real(let v): rc = sqlite3_bind_double(raw, index, v)
        case .text(let v):
            // Bound with its length, so a NUL inside the text is stored with the rest rather
            // than ending it (a cut string could match another row's key).
            var text = v
            rc = text.withUTF8 { utf8 in
                guard let base = utf8.baseAddress, !utf8.isEmpty else { return sqlite3_bind_text(raw, index, "", 0, Self.transient) }
                return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                    sqlite3_bind_text(raw, index, $0, Int32(utf8.count), Self.transient)
                }
            }
        case .null: rc = sqlite3_bind_null(raw, index)
        case .blob(let bytes):
            rc = bytes.isEmpty
                ? sqlite3_bind_zeroblob(raw, index, 0)
                : bytes.withUnsafeBytes { sqlite3_bind_blob(raw, index, $0.baseAddress, Int32($0.count), Self.transient) }
        }
        guard rc == SQLITE_OK else { throw connection.error(sql) }
    }

    /// Advances one step: true when a row is available, false when the statement is done.
    public func step() throws -> Bool {
        switch sqlite3_step(raw) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(sql)
        }
    }

    public func isNull(at column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }
    public func int64(at column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    public func double(at column: Int32) -> Double { sqlite3_column_double(raw, column) }

    /// The column as text, or nil when it is NULL; read by its length, NULs included.
    public func text(at column: Int32) -> String? {
        guard let chars = sqlite3_column_text(raw, column) else { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeRawBufferPointer(start: chars, count: count), as: UTF8.self)
    }

    /// Calls `body` with column `column`'s bytes where SQLite holds them (no copy; valid only
    /// within `body`, empty for NULL or an empty blob).
    public func withBlob<R>(at column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let base = sqlite3_column_blob(raw, column)
        let count = Int(sqlite3_column_bytes(raw, column))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? base : nil, count: count))
    }

    /// The column as bytes, or nil when it is NULL (an empty blob gives `[]`).
    public func blob(at column: Int32) -> [UInt8]? {
        if isNull(at: column) { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let bytes = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// The column as an optional integer (nil when NULL).
    public func optionalInt64(at column: Int32) -> Int64? { isNull(at: column) ? nil : int64(at: column) }

    /// How many columns the statement's rows have.
    public var columnCount: Int32 { sqlite3_column_count(raw) }

    /// The column as whatever SQLite stored: for copying rows whose columns the caller does not name.
    public func value(at column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(raw, column) {
        case SQLITE_INTEGER: .integer(int64(at: column))
        case SQLITE_FLOAT: .real(double(at: column))
        case SQLITE_TEXT: .text(text(at: column) ?? "")
        case SQLITE_BLOB: .blob(blob(at: column) ?? [])
        default: .null
        }
    }
}
