import CSQLite
import Foundation
import TouchlineRuntime

/// Checks made before a store is used, so that a damaged file stops the start with the reason
/// instead of being served as an empty or silently wrong store.
enum StoreIntegrity {
    /// A zero-length file where the database should be is what a failed copy or restore leaves;
    /// SQLite would take it for a new, empty database and every channel would be gone.
    static func refuseEmptyFile(at path: String) throws {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              (attributes[.size] as? NSNumber)?.intValue == 0 else { return }
        throw SQLiteError(code: SQLITE_NOTADB,
                          message: "\(path) is empty (0 bytes) where a database was expected: restore it from a backup, or remove it to start with an empty store",
                          statement: nil)
    }

    /// `PRAGMA quick_check` (pages, records and indexes, without cross-checking every index
    /// entry): a partly overwritten file is refused naming the first problems SQLite found.
    ///
    /// A row whose values break a CHECK or NOT NULL constraint is not a damaged file: the
    /// gateway reads it, finds it invalid and serves it as a broken record beside the others,
    /// so those findings do not stop the start.
    static func check(_ connection: SQLiteConnection) throws {
        let findings = try connection.query("PRAGMA quick_check(1000)") { $0.text(at: 0) ?? "" }
            .filter { !$0.hasPrefix("CHECK constraint failed") && !$0.hasPrefix("NOT NULL constraint failed") }
            .prefix(5)
        guard !findings.isEmpty, findings.first != "ok" else { return }
        throw SQLiteError(code: SQLITE_CORRUPT,
                          message: "\(connection.path) failed its integrity check (\(findings.joined(separator: "; "))): restore it from a backup",
                          statement: "PRAGMA quick_check")
    }
}
