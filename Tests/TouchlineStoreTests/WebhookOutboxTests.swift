import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The webhook outbox on real SQLite files: an event commits with its fact or not at all, in
/// either file; deliveries per endpoint; idempotent records; pruning; the reads the delivery
/// loop and `GET /v1/events` make.
@Suite struct WebhookOutboxTests {
    static func entry(_ id: String, at seconds: Int64 = 1_000, endpoints: [String] = ["a", "b"]) -> WebhookOutboxEntry {
        WebhookOutboxEntry(eventID: id, type: "channel.ended", createdAt: UnixTime(seconds: seconds), body: Array(#"{"id":"\#(id)"}"#.utf8),
                           endpoints: endpoints)
    }

    @Test func anEventCommitsWithItsChannelChangeOrNotAtAll() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        // The batch's change fails (no such channel): the event in the same batch is not stored either.
        await #expect(throws: StoreError.unknownChannel("gone")) {
            try await writer.submit(WriteBatch([.webhook(.record(Self.entry("e1"))),
                                                .markStatus(channelID: "gone", status: .ended, end: nil, at: UnixTime(seconds: 1))]))
        }
        _ = try await writer.createChannel(channel("m1"))
        try await writer.submit(WriteBatch([.markStatus(channelID: "m1", status: .ended, end: nil, at: UnixTime(seconds: 1)),
                                            .webhook(.record(Self.entry("e2")))]))
        let reader = try SQLiteWebhookReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.events(after: 0, limit: 10).map(\.eventID) == ["e2"])
        #expect(try reader.dueDeliveries(endpoint: "a", at: UnixTime(seconds: 1_000), limit: 10).map(\.event.eventID) == ["e2"])
        #expect(try reader.dueDeliveries(endpoint: "b", at: UnixTime(seconds: 999), limit: 10).isEmpty)
        #expect(try reader.backlog(endpoint: "b") == { var b = WebhookEndpointBacklog(); b.pending = 1; b.oldestPendingAt = UnixTime(seconds: 1_000); return b }())
    }

    @Test func aFailedCommitStoresNoEventInThePersonalFile() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("personal.sqlite"))
        defer { writer.close() }
        // Progress for a job that does not exist fails its list: the event it carried goes with it.
        await #expect(throws: (any Error).self) {
            try await writer.submit([.advanceJob(PersonalJobProgress(jobID: "nope", cursor: nil, endedAfterCursor: [],
                                                                     counts: PersonalJobCounts(targeted: 0, sent: 0, failed: [:], expired: 0, pending: 0),
                                                                     status: .done, at: UnixTime(seconds: 1))),
                                     .webhook(.record(Self.entry("p1")))])
        }
        try await writer.submit([.webhook(.record(Self.entry("p2"))), .webhook(.record(Self.entry("p2")))])
        let reader = try SQLiteWebhookReader(path: writer.path)
        defer { reader.close() }
        // The same event id twice (a list written again) is recorded once.
        #expect(try reader.events(after: 0, limit: 10).map(\.eventID) == ["p2"])
        #expect(try reader.backlog(endpoint: "a").pending == 1)
    }

    @Test func outcomesMoveDeliveriesAndPruningDropsOldEventsWithThem() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit(WriteBatch([.webhook(.record(Self.entry("old", at: 100))), .webhook(.record(Self.entry("new", at: 5_000)))]))
        let reader = try SQLiteWebhookReader(path: writer.path)
        defer { reader.close() }
        let events = try reader.events(after: 0, limit: 10)
        #expect(events.map(\.eventID) == ["old", "new"] && events[0].id < events[1].id)
        try await writer.submit(WriteBatch([.webhook(.updateDeliveries([
            WebhookDeliveryUpdate(endpoint: "a", outboxID: events[0].id, attempts: 1, nextAt: UnixTime(seconds: 100), status: .delivered),
            WebhookDeliveryUpdate(endpoint: "b", outboxID: events[0].id, attempts: 2, nextAt: UnixTime(seconds: 9_000), status: .pending),
            WebhookDeliveryUpdate(endpoint: "b", outboxID: events[1].id, attempts: 9, nextAt: UnixTime(seconds: 9_000), status: .dead),
        ]))]))
        #expect(try reader.dueDeliveries(endpoint: "a", at: UnixTime(seconds: 10_000), limit: 10).map(\.event.eventID) == ["new"])
        let due = try reader.dueDeliveries(endpoint: "b", at: UnixTime(seconds: 9_000), limit: 10)
        #expect(due.map(\.event.eventID) == ["old"] && due.first?.attempts == 2)
        #expect(try reader.dueDeliveries(endpoint: "b", at: UnixTime(seconds: 8_999), limit: 10).isEmpty)
        #expect(try reader.backlog(endpoint: "b").dead == 1)
        #expect(try reader.oldestEventCreatedAt() == UnixTime(seconds: 100))
        try await writer.submit(WriteBatch([.webhook(.prune(createdBefore: UnixTime(seconds: 1_000), limit: 100))]))
        #expect(try reader.events(after: 0, limit: 10).map(\.eventID) == ["new"])
        #expect(try reader.oldestEventCreatedAt() == UnixTime(seconds: 5_000))
        #expect(try reader.dueDeliveries(endpoint: "b", at: UnixTime(seconds: 9_000), limit: 10).isEmpty)
        // Ids are never reused after pruning, so a pull cursor only moves forward.
        try await writer.submit(WriteBatch([.webhook(.prune(createdBefore: UnixTime(seconds: 10_000), limit: 100))]))
        #expect(try reader.oldestEventCreatedAt() == nil)
        try await writer.submit(WriteBatch([.webhook(.record(Self.entry("later", at: 6_000)))]))
        #expect(try reader.events(after: 0, limit: 10).first.map { $0.id > events[1].id } == true)
    }
}
