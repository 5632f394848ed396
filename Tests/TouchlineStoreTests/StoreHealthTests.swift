import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The writer knows when its storage fails, refuses nothing itself, and finds out by its own
/// probe when writes work again.
@Suite struct StoreHealthTests {
    @Test func aStorageFailureMakesTheStoreFailingUntilAProbeSucceeds() async throws {
        let dir = TemporaryDirectory()
        let fault = dir.file("disk-full")
        let writer = try StoreWriter(path: dir.file("store.db"), faultFile: fault)
        defer { writer.close() }
        #expect(try await writer.createChannel(channel("m1")).inserted)
        #expect(!writer.health.isFailing)

        #expect(FileManager.default.createFile(atPath: fault, contents: Data()))
        await #expect { try await writer.submit(WriteBatch([.appendEvents([event("m1", 1)])])) } throws: { error in
            (error as? StoreError)?.isStorageFailure == true
        }
        let failing = writer.health
        #expect(failing.isFailing && failing.failingSince != nil)
        #expect(failing.failure?.description.contains("disk is full") == true)

        // Nothing of the failed batch was stored.
        let reader = try SQLiteChannelReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).isEmpty)

        try FileManager.default.removeItem(atPath: fault)
        let deadline = ContinuousClock.now + .seconds(30)
        while writer.health.isFailing && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!writer.health.isFailing, "the probe did not find the store writable again")
        #expect(writer.statistics.probes >= 1)
        try await writer.submit(WriteBatch([.appendEvents([event("m1", 1)])]))
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1])
    }

    /// A refused write (a logical error) says nothing about the disk: the store stays healthy.
    @Test func aRefusedWriteIsNotAStorageFailure() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        await #expect(throws: StoreError.unknownChannel("nope")) {
            try await writer.submit(WriteBatch([.markStatus(channelID: "nope", status: .ended, end: nil, at: t0)]))
        }
        #expect(!writer.health.isFailing)
    }

    /// Text is bound and read with its length: a NUL inside a follow neither cuts it short (which
    /// would put the token in another topic's audience) nor is lost on the way back.
    @Test func textWithANulIsStoredWhole() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit([.registerToken(TokenRecord(token: hexToken(1), kind: .pushToStart, userID: "fan\u{0}one",
                                                            follows: ["team:ARS\u{0}evil"], registeredAt: t0))])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.pushToStartTokens(following: "team:ARS", after: nil, limit: 10).isEmpty)
        #expect(try reader.pushToStartTokens(following: "team:ARS\u{0}evil", after: nil, limit: 10).count == 1)
        #expect(try reader.tokens(userID: "fan").isEmpty)
        #expect(try reader.token(hexToken(1).lowercased())?.userID == "fan\u{0}one")
    }

    /// A row with a value this build does not know is read with the reason, not refused with
    /// every other row.
    @Test func anUnreadableChannelRowIsNamedNotFatal() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        #expect(try await writer.createChannel(channel("a-good")).inserted)
        #expect(try await writer.createChannel(channel("b-bad")).inserted)
        let raw = try SQLiteConnection(path: writer.path)
        try raw.execute("PRAGMA ignore_check_constraints = ON")
        try raw.execute("UPDATE channels SET status = 'exploded', storage_policy = 7 WHERE id = 'b-bad'")
        raw.close()
        let reader = try SQLiteChannelReader(path: writer.path)
        defer { reader.close() }
        let rows = try reader.channels(after: nil, limit: 10)
        #expect(rows.map(\.id) == ["a-good", "b-bad"])
        #expect(rows[0].unreadable == nil)
        #expect(rows[1].unreadable?.contains("exploded") == true, "\(rows[1].unreadable ?? "nil")")
    }
}

/// A damaged file stops the start with the reason; it is never served as an empty store.
@Suite struct StoreIntegrityTests {
    @Test func anEmptyFileWhereADatabaseWasExpectedIsRefused() throws {
        let dir = TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.file("store.db"), contents: Data()))
        #expect { try StoreWriter(path: dir.file("store.db")) } throws: { error in
            "\(error)".contains("is empty (0 bytes) where a database was expected")
        }
    }

    @Test func aPartlyOverwrittenFileIsRefusedNamingTheDamage() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        do {
            let writer = try StoreWriter(path: path)
            for n in 0..<200 { #expect(try await writer.createChannel(channel("damage-\(n)")).inserted) }
            writer.close()
        }
        // Fold the log back into the file, then overwrite a stretch of its pages (not the header).
        let folding = try SQLiteConnection(path: path)
        try folding.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        folding.close()
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: 4096 * 2)
        handle.write(Data(repeating: 0xA5, count: 4096 * 2))
        try handle.close()
        #expect { try StoreWriter(path: path) } throws: { error in
            let text = "\(error)"
            return text.contains("integrity check") || text.contains("malformed") || text.contains("not a database")
        }
    }
}
