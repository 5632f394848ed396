import Foundation
import TouchlineRuntime

/// The token registry, personal jobs and dead letters live in a database file of their own
/// (`personal.sqlite`), written by their own ``StoreWriter``: a fan-out's progress saves then
/// never queue in front of a channel's event commit. Both files carry the whole schema.
public enum PersonalStoreSplit {
    /// The personal tables, parents before children.
    static let tables = ["tokens", "token_follows", "personal_jobs", "personal_targets", "dead_letters"]

    /// Copies the personal tables of a database written before the split into the new personal
    /// file, once: only when `personalPath` does not exist yet. Call before opening either writer.
    /// The old rows stay where they were (unused), so a crash half-way loses nothing.
    public static func copyLegacyRows(from channelsPath: String, to personalPath: String) throws {
        guard FileManager.default.fileExists(atPath: channelsPath), !FileManager.default.fileExists(atPath: personalPath) else { return }
        let legacy = try SQLiteConnection(path: channelsPath)
        defer { legacy.close() }
        try SQLiteSchema.migrate(legacy)
        let count = try legacy.query("SELECT (SELECT count(*) FROM tokens) + (SELECT count(*) FROM personal_jobs)") { $0.int64(at: 0) }
        guard count.first ?? 0 > 0 else { return }
        let staging = personalPath + ".copying"
        try? FileManager.default.removeItem(atPath: staging)
        let copy = try SQLiteConnection(path: staging)
        do {
            try SQLiteSchema.migrate(copy)
            try copy.run("ATTACH DATABASE ? AS legacy", [.text(channelsPath)])
            try copy.transaction {
                for table in tables { try copy.execute("INSERT INTO main.\(table) SELECT * FROM legacy.\(table)") }
            }
            try copy.execute("DETACH DATABASE legacy")
            try copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            copy.close()
        } catch {
            copy.close()
            throw error
        }
        // The copy becomes the personal file only when complete.
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: staging + suffix) }
        try FileManager.default.moveItem(atPath: staging, toPath: personalPath)
    }
}
