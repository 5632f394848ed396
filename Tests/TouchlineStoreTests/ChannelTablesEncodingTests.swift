import Testing
import TouchlineCore
@testable import TouchlineStore

struct ChannelTablesEncodingTests {
    /// Tables after every kind of batch (channels, events, truncation, deletion, outbox rows,
    /// deliveries and a prune): a snapshot of them restores tables that read the same and
    /// encode to the same bytes.
    static func tables() throws -> ChannelTables {
        var tables = ChannelTables()
        for operation in WriteBatchEncodingTests.everything.operations {
            // The sample batch deletes a channel it never made and updates m1 before creating it.
            if case .deleteChannel = operation { continue }
            if case .createChannel(let record) = operation, record.id != "m1" { _ = try tables.insert(record) }
        }
        _ = try tables.insert(ChannelRecord(id: "m1", storagePolicy: .mostRecent, createdAt: WriteBatchEncodingTests.t0))
        for operation in WriteBatchEncodingTests.everything.operations {
            if case .createChannel = operation { continue }
            if case .deleteChannel = operation { continue }
            try tables.apply(operation)
        }
        tables.apply(.record(WebhookOutboxEntry(eventID: "later", type: "channel.started", createdAt: WriteBatchEncodingTests.t0 + .seconds(9),
                                                body: [1], endpoints: ["b", "a", "c"])))
        return tables
    }

    @Test func aSnapshotRestoresTablesThatReadTheSameAndEncodeTheSame() throws {
        let tables = try Self.tables()
        let bytes = tables.binaryEncoded
        let restored = try ChannelTables(binaryEncoded: bytes)
        #expect(restored.binaryEncoded == bytes)
        #expect(restored.channels == tables.channels)
        for id in tables.channels.keys {
            #expect(restored.events(channelID: id, afterSeq: .min, limit: 100) == tables.events(channelID: id, afterSeq: .min, limit: 100))
        }
        #expect(restored.outboxEvents(after: 0, limit: 100) == tables.outboxEvents(after: 0, limit: 100))
        for endpoint in ["a", "b", "c"] {
            #expect(restored.dueDeliveries(endpoint: endpoint, at: .init(nanoseconds: .max), limit: 100)
                == tables.dueDeliveries(endpoint: endpoint, at: .init(nanoseconds: .max), limit: 100))
            #expect(restored.backlog(endpoint: endpoint) == tables.backlog(endpoint: endpoint))
        }
        #expect(restored.lastOutboxEventID == tables.lastOutboxEventID)
        // The next outbox id continues after the snapshot, as it would have without it.
        var next = restored
        var original = tables
        let entry = WebhookOutboxEntry(eventID: "after", type: "t", createdAt: WriteBatchEncodingTests.t0, body: [], endpoints: [])
        next.apply(.record(entry))
        original.apply(.record(entry))
        #expect(next.lastOutboxEventID == original.lastOutboxEventID)
    }

    @Test func aDamagedSnapshotIsRefused() throws {
        let bytes = try Self.tables().binaryEncoded
        for length in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: BinaryRecordReader.Damaged.self) { try ChannelTables(binaryEncoded: Array(bytes.prefix(length))) }
        }
        var other = bytes
        other[0] = 9
        let version = #expect(throws: BinaryRecordReader.Damaged.self) { try ChannelTables(binaryEncoded: other) }
        #expect(version?.problem == "tables layout version 9 is not known")
    }
}
