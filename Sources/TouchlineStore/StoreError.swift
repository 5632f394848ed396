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
