import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

@Suite struct DurabilityTests {
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

@Suite struct CheckpointTests {
    /// Commits never write the log back themselves (that would stall the batches behind them):
    /// the checkpoint thread does, so the log stops growing between rounds of writes instead of
    /// growing with everything ever written.
    @Test func theLogIsCheckpointedOffTheCommitPathAndStopsGrowing() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        _ = try await writer.createChannel(channel("m"))
        var seq: Int64 = 0
        var logSizes: [Int] = []
        for _ in 0..<4 {
            for _ in 0..<300 {
                seq += 1
                try await writer.submit(WriteBatch([.appendEvents([event("m", seq)])]))
            }
            try await Task.sleep(for: .milliseconds(700))
            let size = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            logSizes.append(size)
        }
        // Without checkpoints the log would hold all 1,200 transactions by the last round: about
        // four times the first round's size.
        #expect(logSizes.last! < logSizes.first! * 2, "the log grew round after round: \(logSizes)")
        let reader = try SQLiteChannelReader(path: path)
        #expect(try reader.events(channelID: "m", afterSeq: 1_190, limit: 20).count == 10)
    }
}
