import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A takeover applies a log's tail in batches: one job applies consecutive entries as each
/// would be applied alone, and a gap refuses the whole batch.
@Suite struct RegistryEntryBatchTests {
    @Test func aBatchSkipsWhatTheFileHoldsAppliesTheRestInOrderAndRecordsTheLastSequence() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("registry.sqlite"))
        defer { writer.close() }
        let entries = (1...5).map { n in
            LoggedRegistryEntry(entry: RegistryEntry([Self.register(n)])!, sequence: UInt64(n * 2), previous: UInt64(n * 2 - 2))
        }
        // Entry 1 was applied alone; the batch delivers it again with the rest.
        _ = try waitForCompletion { writer.applyRegistryEntry(entries[0].entry, sequence: 2, previous: 0, completion: $0) }.get()
        // The user of tokens 4 and 5 is one: the fifth replaces the fourth, as applied one by one.
        _ = try waitForCompletion { writer.applyRegistryEntries(entries, completion: $0) }.get()
        #expect(try waitForCompletion { writer.registryLogSequence(completion: $0) }.get() == 10)
        let reader = try SQLiteTokenReader(path: dir.file("registry.sqlite"))
        defer { reader.close() }
        #expect(try (1...5).map { try reader.token(Self.token($0))?.active } == [true, true, true, false, true])
    }

    @Test func aGapRefusesTheWholeBatchAndAppliesNothingOfIt() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("registry.sqlite"))
        defer { writer.close() }
        let batch = [LoggedRegistryEntry(entry: RegistryEntry([Self.register(1)])!, sequence: 1, previous: 0),
                     LoggedRegistryEntry(entry: RegistryEntry([Self.register(2)])!, sequence: 3, previous: 2)]
        let refused = #expect(throws: StoreError.self) { try waitForCompletion { writer.applyRegistryEntries(batch, completion: $0) }.get() }
        #expect(refused?.description.contains("\(StoreWriter.registryLogGap): entry 3 follows 2, this file holds up to 1") == true,
                "\(String(describing: refused))")
        #expect(try waitForCompletion { writer.registryLogSequence(completion: $0) }.get() == 0)
        let reader = try SQLiteTokenReader(path: dir.file("registry.sqlite"))
        defer { reader.close() }
        #expect(try reader.token(Self.token(1)) == nil, "nothing of the refused batch is applied")
    }

    private static func token(_ n: Int) -> String { String(format: "%064x", n) }

    private static func register(_ n: Int) -> TokenOperation {
        .registerToken(TokenRecord(token: token(n), kind: .pushToStart, userID: "fan-\(min(n, 4))", follows: ["team:ARS"],
                                   registeredAt: UnixTime(seconds: Int64(n))))
    }
}
