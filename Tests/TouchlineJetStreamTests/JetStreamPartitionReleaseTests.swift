import Testing
import TestSlots
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// A store gives a partition up (``JetStreamChannelStore/release(partition:)``): the partition's
/// channels, events and outbox rows leave its tables, its other partitions stay as they were,
/// and taking the partition up again restores it from the log (its snapshot, then what follows).
@Suite("JetStream channel store: partitions given up")
struct JetStreamPartitionReleaseTests {
    typealias Store = JetStreamChannelStoreTests
    static let t0 = Store.t0

    static func outboxEntry(_ id: String) -> WebhookOutboxEntry {
        WebhookOutboxEntry(eventID: id, type: "channel.ended", createdAt: t0, body: [1], endpoints: ["hook"])
    }

    @Test(arguments: NATSBackend.allCases)
    func aPartitionGivenUpLeavesTheTablesAndComesBackWholeFromItsLog(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let partitioning = Store.layout.partitioning
            let ids = (0..<64).map { "match-\($0)" }
            let given = partitioning.partition(of: ids[0])
            let mine = ids.filter { partitioning.partition(of: $0) == given }.prefix(3).map { $0 }
            let kept = try #require(ids.first { partitioning.partition(of: $0) != given })
            let fences = PartitionFences(partitions: 8)
            let (fence, later) = (Fence(Revision(5)), Fence(Revision(7)))
            // Every partition under `fence`, but the one given up under `latest`.
            let grant = { (latest: Fence) in
                fences.update(Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, ($0 == given ? latest : fence, ContinuousClock.now + .seconds(3_600))) }))
            }
            grant(fence)
            let node = try Node(cluster)
            let store = try node.open(snapshots: .init(minimumLogBytes: 1_000), fences: fences)
            for partition in Set([given, partitioning.partition(of: kept)]) {
                try await DedicatedThread.run(name: "takeover") { try store.takeOver(partition: partition, under: fence) }
            }
            for id in mine + [kept] { try store.write(.createChannel(Store.channel(id))) }
            for seq in Int64(1)...30 {
                for id in mine { try store.write(.appendEvents([Store.event(id, seq)])) }
            }
            try store.write([.markStatus(channelID: mine[0], status: .ended, end: nil, at: Self.t0), .webhook(.record(Self.outboxEntry("ended-0")))]).get()
            try store.write([.markStatus(channelID: kept, status: .ended, end: nil, at: Self.t0), .webhook(.record(Self.outboxEntry("ended-kept")))]).get()
            try store.write(.appendEvents([Store.event(mine[1], 31)]))
            // The partition comes back from a snapshot and what follows it.
            try await eventually("a snapshot (\(store.snapshotStatistics))") { store.snapshotStatistics.written >= 1 }
            let before = try Store.partitionState(store, given)
            let keptBefore = try Store.partitionState(store, partitioning.partition(of: kept))

            store.release(partition: given)
            try await eventually("the partition's channels leave the tables") { store.heldChannels == 1 }
            let reader = store.openReader()
            defer { reader.close() }
            #expect(try mine.allSatisfy { try reader.channel(id: $0) == nil })
            #expect(try reader.events(channelID: mine[1], afterSeq: 0, limit: 100).isEmpty)
            #expect(try reader.events(after: 0, limit: 10).map(\.eventID) == ["ended-kept"])
            #expect(try reader.backlog(endpoint: "hook").pending == 1)
            #expect(try Store.partitionState(store, partitioning.partition(of: kept)) == keptBefore)
            // Given up, the partition is not written from here: its channels are unknown, and a
            // new one is not logged until the partition is taken over again.
            let unknown = store.write([.markStatus(channelID: mine[1], status: .ending, end: nil, at: Self.t0)])
            #expect(unknown.failure == .unknownChannel(mine[1]), "\(unknown)")
            let notMine = store.write([.createChannel(Store.channel(mine[0]))])
            #expect(notMine.failure?.description.contains("is not taken over by this gateway") == true, "\(notMine)")

            // Taken back, under a later lease.
            grant(later)
            try await DedicatedThread.run(name: "takeover") { try store.takeOver(partition: given, under: later) }
            #expect(try Store.partitionState(store, given) == before)
            #expect(try reader.events(after: 0, limit: 10).map(\.eventID).sorted() == ["ended-0", "ended-kept"])
            #expect(try reader.backlog(endpoint: "hook").pending == 2)
            #expect(store.heldChannels == mine.count + 1)
            try store.write(.appendEvents([Store.event(mine[1], 32)]))
            let restored = try node.open()
            #expect(try Store.partitionState(restored, given) == Store.partitionState(store, given))
            [store, restored].forEach { $0.close() }
        }
    }
}
