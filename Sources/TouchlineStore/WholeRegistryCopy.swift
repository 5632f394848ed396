import Foundation
import TouchlineRuntime

/// The whole token registry as a gateway of a cluster holding it shared keeps it: its own copy
/// in `personal.sqlite`. Once the cluster holds the registry partitioned (`touchline migrate
/// --shared-registry`), a gateway keeps only its partitions, in files of their own, and the
/// whole copy is never read again: left in place, it would keep the whole registry's disk on
/// every gateway. Removed once, before the file's writer opens (docs/scale-out.md).
public enum WholeRegistryCopy {
    /// Empties the registry tables of the file at `personalPath` and gives their space back
    /// (jobs, dead letters and the rest of the file stay); answers how many tokens went. A file
    /// that does not exist, or holds no copy, is left as it is (0).
    public static func remove(from personalPath: String) throws -> Int {
        guard FileManager.default.fileExists(atPath: personalPath) else { return 0 }
        let file = try SQLiteConnection(path: personalPath)
        defer { file.close() }
        try SQLiteSchema.migrate(file)
        let tokens = try file.query("SELECT count(*) FROM tokens") { $0.int64(at: 0) }.first ?? 0
        let followed = try file.query("SELECT sequence FROM registry_log WHERE id = 1") { $0.int64(at: 0) }.first ?? 0
        guard tokens > 0 || followed > 0 else { return 0 }
        try file.transaction {
            for table in RegistrySnapshot.tables(.whole).reversed() { _ = try file.run("DELETE FROM \(table)") }
            _ = try file.run("DELETE FROM registry_log")
        }
        // Deleted rows leave free pages in the file: rewritten, it holds what is left.
        try file.execute("VACUUM")
        try file.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return Int(tokens)
    }
}
