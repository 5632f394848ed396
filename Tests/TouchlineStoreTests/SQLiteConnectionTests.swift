import Foundation
import Testing
import TouchlineRuntime
import TouchlineStore

@Suite struct SQLiteConnectionTests {
    @Test func valuesRoundTripIncludingEmptyBlobsAndNulls() throws {
        let dir = TemporaryDirectory()
        let db = try SQLiteConnection(path: dir.file("values.db"))
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n BLOB)")
        try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [.integer(.min), .real(2.5), .text("Žilina – 2:1 ⚽️"), .blob([]), .null])
        try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [.integer(.max), .real(-0.125), .text(""), .blob([0, 255, 0]), .null])
        struct Row: Equatable { var i: Int64; var r: Double; var s: String?; var b: [UInt8]?; var n: [UInt8]? }
        let rows = try db.query("SELECT i, r, s, b, n FROM t ORDER BY rowid") {
            Row(i: $0.int64(at: 0), r: $0.double(at: 1), s: $0.text(at: 2), b: $0.blob(at: 3), n: $0.blob(at: 4))
        }
        #expect(rows == [
            Row(i: .min, r: 2.5, s: "Žilina – 2:1 ⚽️", b: [], n: nil),
            Row(i: .max, r: -0.125, s: "", b: [0, 255, 0], n: nil),
        ])
    }

    @Test func opensInWALWithTheRequestedSynchronousLevel() throws {
        let dir = TemporaryDirectory()
        let normal = try SQLiteConnection(path: dir.file("normal.db"), synchronous: .normal)
        #expect(try normal.query("PRAGMA journal_mode") { $0.text(at: 0) } == ["wal"])
        #expect(try normal.query("PRAGMA synchronous") { $0.int64(at: 0) } == [1])
        let full = try SQLiteConnection(path: dir.file("full.db"), synchronous: .full)
        #expect(try full.query("PRAGMA synchronous") { $0.int64(at: 0) } == [2])
        #expect(try full.query("PRAGMA foreign_keys") { $0.int64(at: 0) } == [1])
    }

    @Test func errorsCarrySQLitesMessageAndTheStatement() throws {
        let dir = TemporaryDirectory()
        let db = try SQLiteConnection(path: dir.file("errors.db"))
        #expect {
            try db.run("SELEC 1")
        } throws: { error in
            guard let error = error as? SQLiteError else { return false }
            return error.statement == "SELEC 1" && error.message.contains("syntax error")
        }
        try db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        try db.run("INSERT INTO t VALUES (1)")
        #expect {
            try db.run("INSERT INTO t VALUES (?)", [.integer(1)])
        } throws: { error in
            (error as? SQLiteError)?.isConstraintViolation == true && "\(error)".contains("UNIQUE constraint failed: t.k")
        }
        db.close()
        #expect(throws: SQLiteError.self) { try db.run("SELECT 1") }
    }

    @Test func aTransactionRollsBackWhenItsBodyThrows() throws {
        struct Abort: Error {}
        let dir = TemporaryDirectory()
        let db = try SQLiteConnection(path: dir.file("tx.db"))
        try db.execute("CREATE TABLE t (k INTEGER)")
        #expect(throws: Abort.self) {
            try db.transaction {
                try db.run("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        try db.transaction { try db.run("INSERT INTO t VALUES (2)") }
        #expect(try db.query("SELECT k FROM t") { $0.int64(at: 0) } == [2])
    }

    @Test func aFileThatIsNotADatabaseIsRefusedNamingTheCause() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("garbage.db")
        try Data(repeating: 0x5a, count: 8_192).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try StoreWriter(path: path)
        } throws: { error in
            "\(error)".contains("not a database")
        }
    }

    @Test func aDatabaseFromANewerSchemaIsRefused() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("future.db")
        let db = try SQLiteConnection(path: path)
        try db.execute("PRAGMA user_version = 99")
        db.close()
        #expect {
            _ = try StoreWriter(path: path)
        } throws: { error in
            "\(error)".contains("schema version 99")
        }
    }
}
