import CSQLite
import TouchlineRuntime

/// Why a store call failed.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An update or status change named a channel the store does not have.
    case unknownChannel(String)
    /// The store was closed before the write could commit.
    case closed
    /// The database refused: SQLite's message and the statement.
    case database(SQLiteError)

    public var description: String {
        switch self {
        case .unknownChannel(let id): return "unknown channel \"\(id)\""
        case .closed: return "the store is closed"
        case .database(let error): return error.description
        }
    }

    /// True when the storage itself failed (disk full, I/O error, read-only or damaged file)
    /// rather than one write being refused: the same write can succeed once the disk recovers,
    /// and until then every write will fail, so callers answer 503 with `Retry-After`.
    public var isStorageFailure: Bool {
        switch self {
        case .unknownChannel: false
        case .closed: true
        case .database(let error):
            [SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_NOMEM,
             SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL, SQLITE_PERM].contains(error.primaryCode)
        }
    }

    /// A storage failure met by a backend other than SQLite (disk full, storage unreachable),
    /// classified like SQLite's own: ``isStorageFailure`` is true, callers answer 503.
    public static func storageFailure(_ message: String) -> StoreError {
        .database(SQLiteError(code: SQLITE_IOERR, message: message, statement: nil))
    }

    /// A part of the store at its size limit (a cluster's partition log): a storage failure
    /// (503) for the writes to that part only, while the rest of the store stays writable.
    public static func full(_ message: String) -> StoreError {
        .database(SQLiteError(code: SQLITE_FULL, message: message, statement: nil))
    }

    /// Storage at its size limit: a full disk for SQLite, a full log for a cluster (``full(_:)``).
    public var isFull: Bool {
        if case .database(let error) = self { error.primaryCode == SQLITE_FULL } else { false }
    }

    /// A write refused by the store's rules rather than its storage (a duplicate key, a key
    /// still held, a dead letter replayed already), from any backend: ``isStorageFailure`` is false.
    public static func refused(_ message: String) -> StoreError {
        .database(SQLiteError(code: SQLITE_CONSTRAINT, message: message, statement: nil))
    }

    /// Any error met while writing or reading, as a `StoreError`.
    init(_ error: any Error) {
        switch error {
        case let error as StoreError: self = error
        case let error as SQLiteError: self = .database(error)
        default: self = .database(SQLiteError(code: SQLITE_ERROR, message: "\(error)", statement: nil))
        }
    }

    /// Runs `body`, turning any error into a `StoreError`.
    static func wrapping<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw StoreError(error)
        }
    }
}
