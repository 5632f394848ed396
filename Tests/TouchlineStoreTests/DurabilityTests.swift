import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

@Suite(.heavy) struct DurabilityTests {
    @Test func committedDataSurvivesCloseAndReopen() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        do {
            let writer = try StoreWriter(path: path)
            _ = try await writer.createChannel(channel("m"))
            try await writer.submit(WriteBatch([
                .appendEvents((1...3).map { event("m", $0) }),
                .updateState(ChannelStateUpdate(channelID: "m", updatedAt: t0, lastSeq: 3, engineSnapshot: [9])),
            ]))
            writer.close()
        }
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        let reader = try SQLiteChannelReader(path: path)
        let stored = try #require(try reader.channel(id: "m"))
        #expect(stored.lastSeq == 3)
        #expect(stored.engineSnapshot == [9])
        #expect(try reader.events(channelID: "m", afterSeq: 0, limit: 10).map(\.seq) == [1, 2, 3])
    }

    /// Simulated crash: the database and its WAL are copied while the writer still has them open
    /// (nothing checkpointed or closed), and the copy must hold every acknowledged batch.
    @Test(arguments: [SQLiteSynchronous.normal, .full])
    func acknowledgedBatchesSurviveACrashImage(synchronous: SQLiteSynchronous) async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let writer = try StoreWriter(path: path, synchronous: synchronous)
        defer { writer.close() }
        _ = try await writer.createChannel(channel("m"))
        for seq in Int64(1)...200 {
            try await writer.submit(WriteBatch([
                .appendEvents([event("m", seq)]),
                .updateState(ChannelStateUpdate(channelID: "m", updatedAt: t0 + .seconds(seq), lastSeq: seq)),
            ]))
        }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        let image = dir.file("crash-image.db")
        try FileManager.default.copyItem(atPath: path, toPath: image)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: image + "-wal")

        let reader = try SQLiteChannelReader(path: image)
        #expect(try reader.channel(id: "m")?.lastSeq == 200)
        #expect(try reader.events(channelID: "m", afterSeq: 0, limit: 1_000).map(\.seq) == Array(1...200))
    }
}

@Suite(.heavy) struct CheckpointTests {
    /// Commits never write the log back into the database themselves (that would stall the
    /// batches queued behind them): the checkpoint thread does. So the database file itself
    /// grows with what was committed, although the writer never checkpoints.
    @Test func theLogIsCheckpointedOffTheCommitPath() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        _ = try await writer.createChannel(channel("m"))
        func databaseFileSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
        let before = databaseFileSize()
        let body = Array(String(repeating: "x", count: 400).utf8)
        for seq in Int64(1)...500 {
            try await writer.submit(WriteBatch([.appendEvents([StoredEvent(channelID: "m", seq: seq, receivedAt: t0, body: body)])]))
        }
        // 500 events of 400 bytes: about 200 KB that only a checkpoint moves into the database file.
        let deadline = ContinuousClock.now + .seconds(30)
        while databaseFileSize() < before + 150_000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(databaseFileSize() >= before + 150_000, "nothing was checkpointed: \(before) -> \(databaseFileSize()) bytes")
    }
}
