import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineJetStream
import TouchlineStore
import TouchlineTesting

/// The webhook outbox on the JetStream backend: each partition's events live in its log, are
/// numbered by where the log put them (so every gateway reading the log gives them the same
/// ids), take their delivery outcomes in the same log, and travel in its snapshots; pruning is
/// each store's own and logs nothing.
@Suite("JetStream outbox, on nats-server and in memory")
struct JetStreamOutboxTests {
    typealias Fixture = JetStreamChannelStoreTests
    static let t0 = Fixture.t0
    static let layout = Fixture.layout

    static func entry(_ name: String, at created: UnixTime = t0, endpoints: [String] = ["hooks"]) -> WebhookOutboxEntry {
        WebhookOutboxEntry(eventID: name, type: "channel.ended", createdAt: created, body: Array(#"{"id":"\#(name)"}"#.utf8), endpoints: endpoints)
    }

    /// Two channels of different partitions.
    static func twoPartitions() throws -> (String, String) {
        let ids = (0..<50).map { "match-\($0)" }
        let other = try #require(ids.first { layout.partitioning.partition(of: $0) != layout.partitioning.partition(of: ids[0]) })
        return (ids[0], other)
    }

    static func ended(_ id: String, _ event: String, at created: UnixTime = t0) -> [StoreOperation] {
        [.markStatus(channelID: id, status: .ended, end: nil, at: created), .webhook(.record(entry(event, at: created)))]
    }

    /// A store with channels `a` and `b` of different partitions, each ended with an event
    /// (`a-1`, `b-1`).
    static func twoEndedChannels(on node: Node) throws -> (JetStreamChannelStore, a: String, b: String) {
        let (a, b) = try twoPartitions()
        let store = try node.open()
        for id in [a, b] { try store.write(.createChannel(Fixture.channel(id))) }
        try store.write(ended(a, "a-1")).get()
        try store.write(ended(b, "b-1")).get()
        return (store, a, b)
    }

    @Test(arguments: NATSBackend.allCases)
    func eventsAreNumberedByTheirLogSoEveryReaderGivesThemTheSameIDs(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let (store, a, b) = try Self.twoEndedChannels(on: node)
            try store.write(Self.ended(a, "a-2") + [.webhook(.record(Self.entry("a-3")))]).get()
            let events = try store.openReader().events(after: 0, limit: 10)
            let byName = Dictionary(uniqueKeysWithValues: events.map { ($0.eventID, $0.id) })
            #expect(Set(byName.keys) == ["a-1", "a-2", "a-3", "b-1"])
            let (logA, logB) = (ChannelLogLayout.Log.partition(Self.layout.partitioning.partition(of: a)),
                                ChannelLogLayout.Log.partition(Self.layout.partitioning.partition(of: b)))
            #expect(["a-1", "a-2", "a-3"].map { Self.layout.log(ofOutboxID: byName[$0]!) } == [logA, logA, logA])
            #expect(Self.layout.log(ofOutboxID: byName["b-1"]!) == logB)
            #expect(byName["a-1"]! < byName["a-2"]! && byName["a-2"]! < byName["a-3"]!, "a partition's events in commit order")
            // A gateway that reads the same logs (the next owner) numbers them alike.
            let next = try node.open()
            #expect(try next.openReader().events(after: 0, limit: 10).map(\.id).sorted() == events.map(\.id).sorted())
            [store, next].forEach { $0.close() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func deliveryOutcomesGoToTheLogOfTheirEvent(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let (store, a, _) = try Self.twoEndedChannels(on: node)
            let ids = Dictionary(uniqueKeysWithValues: try store.openReader().events(after: 0, limit: 10).map { ($0.eventID, $0.id) })
            let delivered = { (id: Int64) in WebhookDeliveryUpdate(endpoint: "hooks", outboxID: id, attempts: 1, nextAt: Self.t0, status: .delivered) }
            let mixed = store.write([.webhook(.updateDeliveries([delivered(ids["a-1"]!), delivered(ids["b-1"]!)]))])
            #expect(mixed.failure?.description.contains("cannot commit as one") == true, "\(String(describing: mixed.failure))")
            let partitionA = Self.layout.partitioning.partition(of: a)
            let before = try #require(try node.jetStream.streamState(Self.layout.streamName(of: .partition(partitionA)))).lastSequence
            try store.write([.webhook(.updateDeliveries([delivered(ids["a-1"]!)]))]).get()
            let after = try #require(try node.jetStream.streamState(Self.layout.streamName(of: .partition(partitionA)))).lastSequence
            #expect(after == before + 1, "logged to the event's partition")
            let next = try node.open()
            #expect(try next.openReader().dueDeliveries(endpoint: "hooks", at: Self.t0, limit: 10).map(\.event.eventID) == ["b-1"])
            [store, next].forEach { $0.close() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aSnapshotCarriesItsPartitionsOutbox(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let (a, b) = try Self.twoPartitions()
            let store = try node.open(snapshots: .init(minimumLogBytes: 1_000))
            for id in [a, b] { try store.write(.createChannel(Fixture.channel(id))) }
            try store.write(Self.ended(b, "b-1")).get()
            for n in 1...30 {
                try store.write(.appendEvents([Fixture.event(a, Int64(n))]))
                try store.write([.webhook(.record(Self.entry("a-\(n)", at: Self.t0 + .seconds(Int64(n)))))] + [.markStatus(channelID: a, status: .active, end: nil, at: Self.t0)]).get()
            }
            let first = try #require(try store.openReader().events(after: 0, limit: 100).first { $0.eventID == "a-1" })
            try store.write([.webhook(.updateDeliveries([WebhookDeliveryUpdate(endpoint: "hooks", outboxID: first.id, attempts: 1, nextAt: Self.t0, status: .delivered)]))]).get()
            let partitionA = Self.layout.partitioning.partition(of: a)
            store.requestSnapshot(of: partitionA)
            try await eventually("a trim (\(store.snapshotStatistics))", timeout: .seconds(10)) { store.snapshotStatistics.trimmedMessages > 0 }
            let log = try #require(try node.jetStream.streamState(Self.layout.streamName(of: .partition(partitionA))))
            #expect(log.firstSequence > 1, "trimmed below the snapshot")
            let restored = try node.open()
            let reader = restored.openReader()
            #expect(restored.snapshotStatistics.restored >= 1)
            #expect(try reader.events(after: 0, limit: 100).map(\.eventID).sorted() == (["b-1"] + (1...30).map { "a-\($0)" }).sorted())
            #expect(try reader.events(after: 0, limit: 100).map(\.id).sorted() == store.openReader().events(after: 0, limit: 100).map(\.id).sorted())
            let due = try reader.dueDeliveries(endpoint: "hooks", at: Self.t0 + .seconds(100), limit: 100).map(\.event.eventID)
            #expect(due.count == 30 && !due.contains("a-1"), "outcomes travel in the snapshot")
            [store, restored].forEach { $0.close() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aPruneIsThisStoresOwnAndLogsNothing(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let (a, _) = try Self.twoPartitions()
            let store = try node.open()
            try store.write(.createChannel(Fixture.channel(a)))
            for n in 1...3 { try store.write(Self.ended(a, "a-\(n)", at: Self.t0 + .seconds(Int64(n)))).get() }
            let partition = ChannelLogLayout.Log.partition(Self.layout.partitioning.partition(of: a))
            let logged = try #require(try node.jetStream.streamState(Self.layout.streamName(of: partition))).lastSequence
            try store.write([.webhook(.prune(createdBefore: Self.t0 + .seconds(3), limit: 10))]).get()
            #expect(try store.openReader().events(after: 0, limit: 10).map(\.eventID) == ["a-3"])
            #expect(try #require(try node.jetStream.streamState(Self.layout.streamName(of: partition))).lastSequence == logged)
            #expect(try #require(try node.jetStream.streamState(Self.layout.streamName(of: .global))).lastSequence == 0)
            let mixed = store.write([.webhook(.prune(createdBefore: Self.t0, limit: 1)), .markStatus(channelID: a, status: .ended, end: nil, at: Self.t0)])
            #expect(mixed.failure?.description.contains("written on its own") == true)
            store.close()
        }
    }
}
