import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A registry partition's snapshot as its file's image (``RegistrySnapshot/Layout/fileImage``):
/// restored, the file holds what its rows held; damaged or foreign, it is refused and the file
/// stays as it was.
@Suite struct RegistryFileImageTests {
    typealias PartitionFile = UserDirectoryTests.PartitionFile

    /// A partition's file after `entries` logged lists of registrations, notes and replacements.
    private static func filledPartition(at path: String, seed: UInt64 = 7) throws -> PartitionFile {
        let file = try PartitionFile(path: path)
        _ = try waitForCompletion { file.writer.keepAsRegistryPartition(completion: $0) }.get()
        let registrations = UserDirectoryTests.registrations(seed: seed)
        for chunk in stride(from: 0, to: registrations.count, by: 5) {
            let records = registrations[chunk..<min(chunk + 5, registrations.count)]
            try file.apply(records.map { .registerToken($0) } + records.compactMap(UserTokenNote.init(of:)).map { .noteUserToken($0) })
        }
        return file
    }

    private static func rows(of file: PartitionFile) throws -> RegistrySnapshot {
        try waitForCompletion { file.writer.readRegistrySnapshot(rules: .partition, completion: $0) }.get()
    }

    private static func image(of file: PartitionFile) throws -> RegistrySnapshot {
        try waitForCompletion { file.writer.readRegistrySnapshot(rules: .partition, layout: .fileImage, completion: $0) }.get()
    }

    private static func restore(_ snapshot: RegistrySnapshot, into file: PartitionFile) throws -> Bool {
        try waitForCompletion { file.writer.restoreRegistrySnapshot(snapshot, rules: .partition, completion: $0) }.get()
    }

    @Test func aRestoredImageHoldsTheRowsItsFileHeldAndTakesTheLogOnFromThere() throws {
        let dir = TemporaryDirectory()
        let source = try Self.filledPartition(at: dir.file("source.sqlite"))
        defer { source.writer.close() }
        let image = try Self.image(of: source)
        #expect(image.layout == .fileImage && image.sequence == source.sequence)
        #expect(try RegistrySnapshot(binaryEncoded: image.bytes) == image)

        let target = try PartitionFile(path: dir.file("target.sqlite"))
        try target.apply([.registerToken(TokenRecord(token: hexToken(99), kind: .pushToStart, registeredAt: t0))])
        #expect(try Self.restore(image, into: target))
        #expect(try Self.rows(of: target).bytes == Self.rows(of: source).bytes, "the restored file's rows are the source's, the target's own gone")
        #expect(try target.pending() == source.pending())
        #expect(target.writer.health == .healthy)

        // The log goes on from the image's sequence, and the file opens again as any store.
        target.sequence = image.sequence
        let next = TokenRecord(token: hexToken(100), kind: .pushToStart, userID: "user-1", registeredAt: t0 + .seconds(60))
        try target.apply([.registerToken(next)])
        try source.apply([.registerToken(next)])
        target.writer.close()
        let reopened = try PartitionFile(path: dir.file("target.sqlite"))
        defer { reopened.writer.close() }
        #expect(try Self.rows(of: reopened).bytes == Self.rows(of: source).bytes)
        let file = try SQLiteConnection(path: dir.file("target.sqlite"))
        defer { file.close() }
        #expect(try file.query("PRAGMA journal_mode") { $0.text(at: 0) } == ["wal"])
        // An image no newer than what the file holds changes nothing.
        #expect(try Self.restore(image, into: reopened) == false)
        #expect(try Self.rows(of: reopened).bytes == Self.rows(of: source).bytes)
    }

    @Test func aDamagedOrForeignImageIsRefusedNamingWhyAndTheFileStaysAsItWas() throws {
        let dir = TemporaryDirectory()
        let source = try Self.filledPartition(at: dir.file("source.sqlite"))
        defer { source.writer.close() }
        let image = try Self.image(of: source)
        let header = image.bytes.count - (try Self.databaseBytes(of: image)).count
        let pageSize = 4_096
        let tokensRoot = try Self.rootPage(of: "tokens", in: dir.file("source.sqlite"))

        var newerSchema = try SQLiteConnection.opening(image: Self.databaseBytes(of: image)[...]).image()
        newerSchema.replaceSubrange(60..<64, with: [0, 0, 0, 99])  // `PRAGMA user_version` is bytes 60 to 63
        var brokenPage = image.bytes
        brokenPage.replaceSubrange((header + (tokensRoot - 1) * pageSize)..<(header + (tokensRoot - 1) * pageSize + 64),
                                   with: repeatElement(0xff, count: 64))
        let damaged: [(RegistrySnapshot, because: String)] = [
            (RegistrySnapshot(layout: .fileImage, sequence: image.sequence, bytes: Array(image.bytes.dropLast(pageSize))), "malformed"),
            (RegistrySnapshot(layout: .fileImage, sequence: image.sequence, bytes: brokenPage), "malformed"),
            (RegistrySnapshot(layout: .fileImage, sequence: image.sequence, bytes: Array(image.bytes.prefix(header)) + Array(repeating: 7, count: 8_192)),
             "header"),
            (Self.imageSnapshot(at: image.sequence + 5, of: try Self.databaseBytes(of: image)), "holds a file at sequence \(image.sequence)"),
            (Self.imageSnapshot(at: image.sequence, of: newerSchema), "schema version 99"),
        ]

        let target = try PartitionFile(path: dir.file("target.sqlite"))
        defer { target.writer.close() }
        try target.apply([.registerToken(TokenRecord(token: hexToken(99), kind: .pushToStart, registeredAt: t0))])
        let before = try Self.rows(of: target).bytes
        for (snapshot, because) in damaged {
            #expect {
                _ = try Self.restore(snapshot, into: target)
            } throws: { error in
                guard let error = error as? StoreError, !error.isStorageFailure else { return false }
                return error.description.contains(because)
            }
            #expect(try Self.rows(of: target).bytes == before, "after the image refused for its \(because)")
            #expect(target.writer.health == .healthy, "an image is input: its refusal is no storage failure")
        }
        // The file takes its log on as if nothing had come.
        try target.apply([.registerToken(TokenRecord(token: hexToken(98), kind: .pushToStart, registeredAt: t0))])
    }

    @Test func aWholeRegistrysFileIsNeitherReadNorRestoredAsAnImage() throws {
        let dir = TemporaryDirectory()
        let source = try Self.filledPartition(at: dir.file("source.sqlite"))
        defer { source.writer.close() }
        #expect(throws: StoreError.self) { try waitForCompletion { source.writer.readRegistrySnapshot(layout: .fileImage, completion: $0) }.get() }
        let image = try Self.image(of: source)
        let whole = try StoreWriter(path: dir.file("personal.sqlite"))
        defer { whole.close() }
        #expect(throws: StoreError.self) { try waitForCompletion { whole.restoreRegistrySnapshot(image, completion: $0) }.get() }
    }

    private static func databaseBytes(of snapshot: RegistrySnapshot) throws -> [UInt8] {
        var reader = BinaryRecordReader(snapshot.bytes)
        #expect(try reader.byte() == RegistrySnapshot.Layout.fileImage.rawValue)
        #expect(try reader.unsigned() == snapshot.sequence)
        return Array(snapshot.bytes[reader.offset...])
    }

    private static func imageSnapshot(at sequence: UInt64, of database: [UInt8]) -> RegistrySnapshot {
        var writer = BinaryRecordWriter()
        writer.byte(RegistrySnapshot.Layout.fileImage.rawValue)
        writer.unsigned(sequence)
        writer.raw(database)
        return RegistrySnapshot(layout: .fileImage, sequence: sequence, bytes: writer.bytes)
    }

    private static func rootPage(of table: String, in path: String) throws -> Int {
        let file = try SQLiteConnection(path: path)
        defer { file.close() }
        return Int(try file.query("SELECT rootpage FROM sqlite_master WHERE name = ?", [.text(table)]) { $0.int64(at: 0) }.first ?? 0)
    }
}
