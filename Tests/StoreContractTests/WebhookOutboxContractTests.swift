import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore

/// The contract of the webhook outbox: events written with their facts through either write
/// family, and ``WebhookOutboxReader``, on every implementation (the channel side's also on the
/// JetStream backend, where each log numbers its own events and a prune is the store's own).
@Suite(.heavy) struct WebhookOutboxContractTests {
    static func entry(_ n: Int, at created: UnixTime, endpoints: [String] = ["a", "b"]) -> WebhookOutboxEntry {
        WebhookOutboxEntry(eventID: "event-\(n)", type: "channel.ended", createdAt: created, body: Array(#"{"n":\#(n)}"#.utf8),
                           endpoints: endpoints)
    }

    static func write(_ store: ChannelStoreUnderTest, _ operations: [StoreOperation]) -> Result<Void, StoreError> {
        awaitResult { store.channelWriter.submit(WriteBatch(operations), completion: $0) }
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func anEventCommitsWithItsFactOrNotAtAll(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        let failed = Self.write(store, [.webhook(.record(Self.entry(1, at: t0))), .updateState(ChannelStateUpdate(channelID: "nope", updatedAt: t0))])
        #expect(failed.failure == .unknownChannel("nope"))
        let reader = try store.outboxReader()
        defer { reader.close() }
        #expect(try reader.events(after: 0, limit: 10).isEmpty && reader.lastEventID() == 0, "no event without its fact")

        try Self.write(store, [.markStatus(channelID: "m1", status: .ending, end: nil, at: t0), .webhook(.record(Self.entry(1, at: t0)))]).get()
        // Recorded again (a list written once more after a failed commit): stored once.
        try Self.write(store, [.webhook(.record(Self.entry(1, at: t0)))]).get()
        try Self.write(store, [.webhook(.record(Self.entry(2, at: t0 + .seconds(1), endpoints: ["a"])))]).get()
        let events = try reader.events(after: 0, limit: 10)
        #expect(events.map(\.eventID) == ["event-1", "event-2"] && events[0].body == Array(#"{"n":1}"#.utf8))
        #expect(try reader.lastEventID() == events[1].id)
        #expect(try reader.dueDeliveries(endpoint: "a", at: t0 + .seconds(1), limit: 10).map(\.event.eventID) == ["event-1", "event-2"])
        #expect(try reader.dueDeliveries(endpoint: "b", at: t0 + .seconds(1), limit: 10).map(\.event.eventID) == ["event-1"])
        #expect(try reader.dueDeliveries(endpoint: "a", at: t0, limit: 10).map(\.event.eventID) == ["event-1"], "due at its creation")
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func outcomesDecideWhatIsDueNext(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        for n in 1...4 { try Self.write(store, [.webhook(.record(Self.entry(n, at: t0 + .seconds(Int64(n)))))]).get() }
        let reader = try store.outboxReader()
        defer { reader.close() }
        let ids = try reader.events(after: 0, limit: 10).map(\.id)
        try Self.write(store, [.webhook(.updateDeliveries([
            WebhookDeliveryUpdate(endpoint: "a", outboxID: ids[0], attempts: 1, nextAt: t0, status: .delivered),
            WebhookDeliveryUpdate(endpoint: "a", outboxID: ids[1], attempts: 1, nextAt: t0 + .seconds(100), status: .pending),
            WebhookDeliveryUpdate(endpoint: "a", outboxID: ids[2], attempts: 9, nextAt: t0, status: .dead),
            WebhookDeliveryUpdate(endpoint: "a", outboxID: 999_999, attempts: 1, nextAt: t0, status: .delivered),   // pruned: skipped
        ]))]).get()
        let now = t0 + .seconds(10)
        #expect(try reader.dueDeliveries(endpoint: "a", at: now, limit: 10).map(\.event.id) == [ids[3]])
        #expect(try reader.nextDue(endpoint: "a") == t0 + .seconds(4))
        let later = try reader.dueDeliveries(endpoint: "a", at: t0 + .seconds(100), limit: 10)
        #expect(later.map(\.event.id) == [ids[3], ids[1]] && later[1].attempts == 1, "the earliest due first")
        #expect(try reader.dueDeliveries(endpoint: "b", at: now, limit: 2).map(\.event.id) == [ids[0], ids[1]], "up to the limit")
        let backlog = try reader.backlog(endpoint: "a")
        #expect(backlog.pending == 2 && backlog.dead == 1 && backlog.oldestPendingAt == t0 + .seconds(2))
        #expect(try reader.backlog(endpoint: "c").pending == 0 && reader.nextDue(endpoint: "c") == nil)
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func aPruneDropsTheOldestEventsWithTheirDeliveriesAndIDsMoveOn(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        for n in 1...10 { try Self.write(store, [.webhook(.record(Self.entry(n, at: t0 + .seconds(Int64(n)))))]).get() }
        let reader = try store.outboxReader()
        defer { reader.close() }
        var paged: [StoredWebhookEvent] = []
        while case let page = try reader.events(after: paged.last?.id ?? 0, limit: 3), !page.isEmpty { paged += page }
        #expect(paged.map(\.eventID) == (1...10).map { "event-\($0)" }, "commit order, without gaps or repeats")

        try Self.write(store, [.webhook(.prune(createdBefore: t0 + .seconds(8), limit: 4))]).get()
        #expect(try reader.events(after: 0, limit: 100).map(\.eventID) == (5...10).map { "event-\($0)" })
        #expect(try reader.oldestEventCreatedAt() == t0 + .seconds(5))
        #expect(try reader.dueDeliveries(endpoint: "a", at: t0 + .seconds(100), limit: 100).count == 6, "the deliveries went with them")
        try Self.write(store, [.webhook(.prune(createdBefore: t0 + .seconds(100), limit: 100))]).get()
        #expect(try reader.oldestEventCreatedAt() == nil && reader.backlog(endpoint: "a").pending == 0)
        try Self.write(store, [.webhook(.record(Self.entry(11, at: t0 + .seconds(11))))]).get()
        #expect(try reader.events(after: paged.last!.id, limit: 10).map(\.eventID) == ["event-11"], "an id is never used twice")
    }

    /// The personal side's writes carry the same outbox operations: an event recorded through
    /// them is read back like one recorded with a channel's fact.
    @Test(arguments: StoreKind.allCases)
    func thePersonalWritesRecordEventsToo(kind: StoreKind) throws {
        let store = try kind.open()
        try awaitResult { store.writer.submit([.webhook(.record(Self.entry(1, at: t0, endpoints: ["a"])))], completion: $0) }.get()
        let reader = try store.outboxReader()
        defer { reader.close() }
        #expect(try reader.events(after: 0, limit: 10).map(\.eventID) == ["event-1"])
        #expect(try reader.dueDeliveries(endpoint: "a", at: t0, limit: 10).map(\.event.eventID) == ["event-1"])
    }
}
