import Testing
import TouchlineCore
@testable import TouchlineStore

/// A partition's channels taken out as tables of their own and put back, as the JetStream
/// backend's snapshots do.
struct ChannelTablesSubsetTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)

    static func tables(_ ids: [String], apnsIDs: [String: String] = [:]) throws -> ChannelTables {
        var tables = ChannelTables()
        for id in ids {
            _ = try tables.insert(ChannelRecord(id: id, apnsChannelID: apnsIDs[id], storagePolicy: .mostRecent, status: .active, createdAt: t0))
            try tables.apply(.appendEvents([StoredEvent(channelID: id, seq: 1, receivedAt: t0, body: Array(id.utf8))]))
        }
        tables.apply(.record(WebhookOutboxEntry(eventID: "e1", type: "channel.started", createdAt: t0, body: [1], endpoints: ["a"])))
        return tables
    }

    static func events(_ tables: ChannelTables, _ id: String) -> [Int64] {
        tables.events(channelID: id, afterSeq: .min, limit: 100).map(\.seq)
    }

    @Test func aSubsetHoldsTheSelectedChannelsWithTheirEventsAndNoOutbox() throws {
        let tables = try Self.tables(["a1", "a2", "b1"])
        let subset = tables.subset { $0.hasPrefix("a") }
        #expect(Set(subset.channels.keys) == ["a1", "a2"])
        #expect(Self.events(subset, "a1") == [1])
        #expect(subset.outboxEvents(after: 0, limit: 10).isEmpty)
    }

    @Test func replacingPutsTheSubsetInPlaceOfTheSelectedChannelsAndKeepsTheRest() throws {
        var tables = try Self.tables(["a1", "a2", "b1"])
        // The snapshot knows a3 but not a2 (deleted before it was taken), and a1 with more events.
        var snapshot = try Self.tables(["a1", "a3"])
        try snapshot.apply(.appendEvents([StoredEvent(channelID: "a1", seq: 2, receivedAt: Self.t0, body: [])]))
        try tables.replaceChannels(where: { $0.hasPrefix("a") }, with: snapshot.subset { _ in true })
        #expect(Set(tables.channels.keys) == ["a1", "a3", "b1"])
        #expect(Self.events(tables, "a1") == [1, 2])
        #expect(Self.events(tables, "a2").isEmpty)
        #expect(Self.events(tables, "b1") == [1])
        #expect(tables.outboxEvents(after: 0, limit: 10).map(\.eventID) == ["e1"])
    }

    @Test func aSubsetWithAChannelOutsideTheSelectionChangesNothing() throws {
        var tables = try Self.tables(["a1", "b1"])
        let before = tables.binaryEncoded
        let foreign = #expect(throws: StoreError.self) {
            try tables.replaceChannels(where: { $0.hasPrefix("a") }, with: try Self.tables(["a1", "b2"]).subset { _ in true })
        }
        #expect(foreign?.description.contains("channel b2 does not belong") == true)
        #expect(tables.binaryEncoded == before)
    }

    @Test func anAPNsIDHeldByAChannelOutsideTheSelectionIsRefusedWhole() throws {
        var tables = try Self.tables(["a1", "b1"], apnsIDs: ["b1": "X"])
        let before = tables.binaryEncoded
        let clash = try Self.tables(["a1", "a2"], apnsIDs: ["a2": "X"]).subset { _ in true }
        let refused = #expect(throws: StoreError.self) { try tables.replaceChannels(where: { $0.hasPrefix("a") }, with: clash) }
        #expect(refused?.description.contains("apns_channel_id") == true)
        #expect(tables.binaryEncoded == before)
    }
}
