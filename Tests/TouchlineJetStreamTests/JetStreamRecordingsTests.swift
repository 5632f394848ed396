import Foundation
import NATS
import Testing
import TestSlots
import TouchlineCore
import TouchlineJetStream
import TouchlineStore
import TouchlineTesting

/// Recorded feeds on the cluster: a recording channel's events go to the stream of recordings
/// (one subject per channel), not to the partition's tables, so snapshots stay small and the
/// log is trimmed as usual; a crash between a batch and its copies is repaired by the next
/// reader of the log; a deleted channel's recording goes with it.
@Suite("JetStream recordings, on nats-server and in memory")
struct JetStreamRecordingsTests {
    typealias Fixture = JetStreamChannelStoreTests

    @Test(arguments: NATSBackend.allCases)
    func recordedEventsOutliveTheTrimmedLogAndStayOutOfItsSnapshots(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let store = try node.open(snapshots: .init(minimumLogBytes: 2_000))
            let partition = Fixture.layout.partitioning.partition(of: "rec-1")
            try store.write(.createChannel(Fixture.channel("rec-1")))
            for seq in Int64(1)...300 {
                let operations: [StoreOperation] = [.recordEvents([Fixture.event("rec-1", seq)]),
                                                    .updateState(ChannelStateUpdate(channelID: "rec-1", updatedAt: Fixture.t0 + .seconds(seq), lastSeq: seq))]
                try store.write(operations).get()
            }
            try await eventually("a trim (\(store.snapshotStatistics))", timeout: .seconds(10)) { store.snapshotStatistics.trimmedMessages > 0 }
            let log = try #require(try node.jetStream.streamState(Fixture.layout.streamName(of: .partition(partition))))
            #expect(log.firstSequence > 1, "the log is trimmed below its snapshot: \(log)")
            // The tables (and so the snapshots) hold the channel's state, not its recording.
            #expect(try store.openReader().events(channelID: "rec-1", afterSeq: 0, limit: 1_000).isEmpty)
            #expect(try store.recordedEvents(of: "rec-1", since: Fixture.t0, limit: 1_000).map(\.seq) == Array(1...300))
            #expect(try store.recordedEventCount(of: "rec-1") == 300)
            #expect(try store.recordedEvents(of: "rec-1", since: Fixture.t0, limit: 10).map(\.seq) == Array(1...10))
            #expect(try store.recordedEvents(of: "rec-1", since: Fixture.t0 + .seconds(291), limit: 1_000).map(\.seq) == Array(291...300),
                    "only what came at or after the given time")
            // A store that reads the partition afresh (from the snapshot) reads the same recording,
            // and copies nothing again.
            let restored = try node.open()
            #expect(restored.snapshotStatistics.restored == 1)
            #expect(try restored.openReader().channel(id: "rec-1")?.lastSeq == 300)
            #expect(try restored.recordedEvents(of: "rec-1", since: Fixture.t0, limit: 1_000).map(\.seq) == Array(1...300))
            #expect(try restored.recordedEventCount(of: "rec-1") == 300)
            [store, restored].forEach { $0.close() }
        }
    }

    /// A batch logged by an owner that died before copying its recorded events: the next store
    /// to read the partition copies what the recording lacks, once; a deleted channel's
    /// recording is removed.
    @Test(arguments: NATSBackend.allCases)
    func aCrashBetweenABatchAndItsCopiesIsRepairedByTheNextReader(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let owner = try node.open()
            try owner.write(.createChannel(Fixture.channel("rec-2")))
            try owner.write(.recordEvents((1...3).map { Fixture.event("rec-2", $0) }))
            // What the owner logged just before it died: the batch, without its copies.
            let partition = Fixture.layout.partitioning.partition(of: "rec-2")
            let lost = WriteBatch([.recordEvents([Fixture.event("rec-2", 4), Fixture.event("rec-2", 5)])])
            #expect(await node.publish(lost.binaryEncoded, to: Fixture.layout.subject(of: .partition(partition))) != nil)
            #expect(try owner.recordedEvents(of: "rec-2", since: Fixture.t0, limit: 100).map(\.seq) == [1, 2, 3])

            let next = try node.open()
            #expect(try next.recordedEvents(of: "rec-2", since: Fixture.t0, limit: 100).map(\.seq) == [1, 2, 3, 4, 5])
            #expect(try next.recordedEventCount(of: "rec-2") == 5, "the copies it had are not made twice")
            let again = try node.open()
            #expect(try again.recordedEventCount(of: "rec-2") == 5, "a later reader finds nothing missing")

            try next.write(.deleteChannel(channelID: "rec-2"))
            try await eventually("the recording goes with its channel", timeout: .seconds(10)) { (try? next.recordedEventCount(of: "rec-2")) == 0 }
            [owner, next, again].forEach { $0.close() }
        }
    }
}
