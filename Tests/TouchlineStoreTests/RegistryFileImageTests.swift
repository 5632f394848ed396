import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A registry partition's snapshot as its file's image (``RegistryImageFile``): written to a file,
/// logged in parts and received into a file again; restored, the file holds what its rows held;
/// damaged or foreign, it is refused and the file stays as it was.
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

    private static func image(of file: PartitionFile, to path: String) throws -> RegistryImageFile {
        try waitForCompletion { file.writer.writeRegistryImage(rules: .partition, to: path, completion: $0) }.get()
    }

    private static func restore(_ image: RegistryImageFile, into file: PartitionFile) throws -> Bool {
        try waitForCompletion { file.writer.restoreRegistryImage(image, rules: .partition, completion: $0) }.get()
    }

    /// `image` as a new owner receives it: its logged bytes in parts of `partBytes` into a file at `path`.
    private static func received(_ image: RegistryImageFile, partBytes: Int, at path: String) throws -> RegistrySnapshotReceiver.Received {
        let receiver = try RegistrySnapshotReceiver(path: path)
        for start in stride(from: 0, to: image.loggedByteCount, by: partBytes) {
            try receiver.add(try image.loggedBytes(start..<min(start + partBytes, image.loggedByteCount)))
        }
        #expect(receiver.receivedBytes == image.loggedByteCount)
        return try receiver.finish()
    }

    @Test func aRestoredImageHoldsTheRowsItsFileHeldAndTakesTheLogOnFromThere() throws {
        let dir = TemporaryDirectory()
        let source = try Self.filledPartition(at: dir.file("source.sqlite"))
        defer { source.writer.close() }
        let written = try Self.image(of: source, to: dir.file("image-out"))
        #expect(written.sequence == source.sequence && written.imageBytes > 0)
        // Logged in parts and received into a file, it is the same image.
        guard case .image(let image) = try Self.received(written, partBytes: 1_000, at: dir.file("image-in")) else {
            Issue.record("a file image received as rows")
            return
        }
        #expect(image.sequence == written.sequence)
        #expect(try Self.bytes(of: image) == Self.bytes(of: written))

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

    /// Rows logged by an earlier build's partition are received as rows and restored as before.
    @Test func rowsReceivedInPartsAreRestoredAsRows() throws {
        let dir = TemporaryDirectory()
        let source = try Self.filledPartition(at: dir.file("source.sqlite"))
        defer { source.writer.close() }
        let rows = try Self.rows(of: source)
        let receiver = try RegistrySnapshotReceiver(path: dir.file("rows-in"))
        for start in stride(from: 0, to: rows.bytes.count, by: 700) { try receiver.add(Array(rows.bytes[start..<min(start + 700, rows.bytes.count)])) }
        guard case .rows(let received) = try receiver.finish() else {
            Issue.record("rows received as an image")
            return
        }
        #expect(received == rows)
    }

    @Test func aDamagedOrForeignImageIsRefusedNamingWhyAndTheFileStaysAsItWas() throws {
        let dir = TemporaryDirectory()
        let source = try Self.filledPartition(at: dir.file("source.sqlite"))
        defer { source.writer.close() }
        let image = try Self.image(of: source, to: dir.file("image"))
        let bytes = try Self.bytes(of: image)
        let pageSize = 4_096
        let tokensRoot = try Self.rootPage(of: "tokens", in: dir.file("source.sqlite"))

        var newerSchema = bytes
        newerSchema.replaceSubrange(60..<64, with: [0, 0, 0, 99])  // `PRAGMA user_version` is bytes 60 to 63
        var brokenPage = bytes
        brokenPage.replaceSubrange(((tokensRoot - 1) * pageSize)..<((tokensRoot - 1) * pageSize + 64), with: repeatElement(0xff, count: 64))
        let damaged: [(RegistryImageFile, because: String)] = [
            (try Self.imageFile(Array(bytes.dropLast(pageSize)), at: image.sequence, in: dir.file("truncated")), "malformed"),
            (try Self.imageFile(brokenPage, at: image.sequence, in: dir.file("broken")), "malformed"),
            (try Self.imageFile(Array(repeating: 7, count: 8_192), at: image.sequence, in: dir.file("foreign")), "header"),
            (RegistryImageFile(sequence: image.sequence + 5, path: image.path), "holds a file at sequence \(image.sequence)"),
            (try Self.imageFile(newerSchema, at: image.sequence, in: dir.file("newer")), "schema version 99"),
            (RegistryImageFile(sequence: image.sequence, path: dir.file("missing")), "cannot be opened"),
        ]

        let target = try PartitionFile(path: dir.file("target.sqlite"))
        defer { target.writer.close() }
        try target.apply([.registerToken(TokenRecord(token: hexToken(99), kind: .pushToStart, registeredAt: t0))])
        let before = try Self.rows(of: target).bytes
        for (image, because) in damaged {
            #expect {
                _ = try Self.restore(image, into: target)
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
        #expect(throws: StoreError.self) {
            try waitForCompletion { source.writer.writeRegistryImage(rules: .whole, to: dir.file("whole-image"), completion: $0) }.get()
        }
        let image = try Self.image(of: source, to: dir.file("image"))
        let whole = try StoreWriter(path: dir.file("personal.sqlite"))
        defer { whole.close() }
        #expect(throws: StoreError.self) { try waitForCompletion { whole.restoreRegistryImage(image, rules: .whole, completion: $0) }.get() }
        // Nor is an image restored from bytes in memory: only from its file.
        let inMemory = RegistrySnapshot(layout: .fileImage, sequence: image.sequence, bytes: try image.loggedBytes(0..<image.loggedByteCount))
        #expect(throws: StoreError.self) {
            try waitForCompletion { source.writer.restoreRegistrySnapshot(inMemory, rules: .partition, completion: $0) }.get()
        }
    }

    private static func bytes(of image: RegistryImageFile) throws -> [UInt8] {
        Array(try #require(FileManager.default.contents(atPath: image.path)))
    }

    /// A file at `path` holding `bytes`, as an image at `sequence`.
    private static func imageFile(_ bytes: [UInt8], at sequence: UInt64, in path: String) throws -> RegistryImageFile {
        try #require(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return RegistryImageFile(sequence: sequence, path: path)
    }

    private static func rootPage(of table: String, in path: String) throws -> Int {
        let file = try SQLiteConnection(path: path)
        defer { file.close() }
        return Int(try file.query("SELECT rootpage FROM sqlite_master WHERE name = ?", [.text(table)]) { $0.int64(at: 0) }.first ?? 0)
    }
}
