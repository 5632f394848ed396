import Testing
import TouchlineCore
@testable import TouchlineStore

/// A batch checked on the rows it touches (``ChannelTables/scoped(to:)``), as the JetStream
/// backend checks every write, must succeed or fail exactly as on the whole tables.
struct ChannelTablesScopeTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)
    static let ids = (0..<12).map { "m\($0)" }
    static let apnsIDs = ["A", "B", "C", "D"]

    static func record(_ id: String, apnsID: String?) -> ChannelRecord {
        ChannelRecord(id: id, apnsChannelID: apnsID, storagePolicy: .mostRecent, status: .active, createdAt: t0)
    }

    /// One operation drawn from a small world of channels, seqs and APNs ids, so that batches
    /// often clash: unknown channels, repeated seqs, APNs ids already held, deleted channels.
    static func operation(_ random: inout SplitMix64) -> StoreOperation {
        let id = ids.randomElement(using: &random)!
        let apnsID = apnsIDs.randomElement(using: &random)!
        let seq = Int64.random(in: 1...4, using: &random)
        let at = t0 + .seconds(Int64.random(in: 0...100, using: &random))
        switch Int.random(in: 0..<9, using: &random) {
        case 0: return .createChannel(record(id, apnsID: Bool.random(using: &random) ? apnsID : nil))
        case 1: return .channelCreated(channelID: id, apnsChannelID: apnsID, at: at)
        case 2: return .updateState(ChannelStateUpdate(channelID: id, updatedAt: at, contentState: Array("\(seq)".utf8), lastSeq: seq))
        case 3: return .markStatus(channelID: id, status: .ending, end: nil, at: at)
        case 4: return .deleteChannel(channelID: id)
        case 5: return .truncateEvents(channelID: id, throughSeq: seq)
        case 6: return .webhook(.record(WebhookOutboxEntry(eventID: "\(id)-\(seq)", type: "channel.ended", createdAt: at, body: [], endpoints: ["a"])))
        default:
            let other = ids.randomElement(using: &random)!
            return .appendEvents([StoredEvent(channelID: id, seq: seq, receivedAt: at, body: [1]),
                                  StoredEvent(channelID: other, seq: seq + 1, receivedAt: at, body: [2])])
        }
    }

    /// The outcome of applying `batch` all or nothing: the tables after it, or its error.
    static func applied(_ batch: [StoreOperation], to tables: ChannelTables) -> Result<ChannelTables, StoreError> {
        var next = tables
        do throws(StoreError) {
            for operation in batch { try next.apply(operation) }
        } catch {
            return .failure(error)
        }
        return .success(next)
    }

    @Test func aBatchCheckedOnItsScopeSucceedsOrFailsAsOnTheWholeTablesAndChangesItsChannelsAlike() {
        var random = SplitMix64(seed: 34)
        var tables = ChannelTables()
        var outcomes = (succeeded: 0, failed: 0)
        for round in 0..<3_000 {
            let batch = (0..<Int.random(in: 1...4, using: &random)).map { _ in Self.operation(&random) }
            let scope = ChannelScope(batch)
            let whole = Self.applied(batch, to: tables)
            let scoped = Self.applied(batch, to: tables.scoped(to: scope))
            switch (whole, scoped) {
            case (.failure(let expected), .failure(let found)):
                #expect(found == expected, "round \(round): \(batch)")
                outcomes.failed += 1
            case (.success(let after), .success(let afterScoped)):
                for id in scope.channelIDs {
                    #expect(afterScoped.channel(id: id) == after.channel(id: id), "round \(round), \(id): \(batch)")
                    #expect(afterScoped.events(channelID: id, afterSeq: .min, limit: 100) == after.events(channelID: id, afterSeq: .min, limit: 100),
                            "round \(round), \(id): \(batch)")
                }
                for apnsID in scope.apnsChannelIDs {
                    #expect(afterScoped.channel(apnsChannelID: apnsID) == after.channel(apnsChannelID: apnsID), "round \(round), \(apnsID)")
                }
                tables = after
                outcomes.succeeded += 1
                // The listing's order index follows creates and deletes.
                let listed = tables.channels(after: nil, limit: 100).map(\.id)
                #expect(listed == tables.channels.keys.sorted(by: ChannelTables.precedes), "round \(round): \(listed)")
            default:
                Issue.record("round \(round): the whole tables answered \(whole), the scope \(scoped), for \(batch)")
                return
            }
        }
        // The world is small enough that both outcomes are common, and the tables keep channels.
        #expect(outcomes.succeeded > 300 && outcomes.failed > 300, "\(outcomes)")
        #expect(!tables.channels.isEmpty)
    }

    @Test func aScopeHoldsItsChannelsAndTheHoldersOfItsAPNsIDsAndNothingElse() throws {
        var tables = ChannelTables()
        for id in Self.ids { _ = try tables.insert(Self.record(id, apnsID: id == "m3" ? "A" : nil)) }
        try tables.apply(.appendEvents([StoredEvent(channelID: "m1", seq: 1, receivedAt: Self.t0, body: [])]))
        let scoped = tables.scoped(to: ChannelScope([.channelCreated(channelID: "m1", apnsChannelID: "A", at: Self.t0),
                                                     .updateState(ChannelStateUpdate(channelID: "m9", updatedAt: Self.t0))]))
        #expect(Set(scoped.channels.keys) == ["m1", "m3", "m9"])
        #expect(scoped.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1])
        #expect(scoped.channel(apnsChannelID: "A")?.id == "m3")
    }

    /// The APNs id index follows the channels: a deleted channel's id, or a removed partition's,
    /// may be taken again, and a snapshot's decoding indexes what it restores.
    @Test func anAPNsIDIsFreeAgainOnceItsChannelIsGone() throws {
        var tables = ChannelTables()
        _ = try tables.insert(Self.record("m1", apnsID: "A"))
        _ = try tables.insert(Self.record("m2", apnsID: "B"))
        #expect(throws: StoreError.self) { try tables.insert(Self.record("m3", apnsID: "A")) }
        try tables.apply(.deleteChannel(channelID: "m1"))
        #expect(tables.channel(apnsChannelID: "A") == nil)
        #expect(try tables.insert(Self.record("m3", apnsID: "A")))
        tables.removeChannels { $0 == "m2" }
        try tables.apply(.channelCreated(channelID: "m3", apnsChannelID: "B", at: Self.t0))
        #expect(tables.channel(apnsChannelID: "A") == nil)
        #expect(tables.channel(apnsChannelID: "B")?.id == "m3")
        let decoded = try ChannelTables(binaryEncoded: tables.binaryEncoded)
        #expect(decoded.channel(apnsChannelID: "B")?.id == "m3")
        #expect(throws: StoreError.self) { var copy = decoded; _ = try copy.insert(Self.record("m4", apnsID: "B")) }
    }

    /// Pages of the listing, from any id (held or not), follow the binary order, also after a
    /// partition's channels were removed and a snapshot of them restored.
    @Test func pagesFollowTheBinaryOrderFromAnyIDThroughRemovalsAndRestores() throws {
        var random = SplitMix64(seed: 7)
        var tables = ChannelTables()
        let ids = (0..<300).map { _ in String(Int.random(in: 0..<100_000, using: &random), radix: 36) }
        for id in ids { _ = try tables.insert(Self.record(id, apnsID: nil)) }
        let inB = { (id: String) in id.utf8.first.map { $0 % 2 == 0 } ?? false }
        let snapshot = tables.subset(where: inB)
        tables.removeChannels(where: inB)
        #expect(tables.channels.keys.allSatisfy { !inB($0) })
        try tables.replaceChannels(where: inB, with: snapshot)
        let expected = Set(ids).sorted(by: ChannelTables.precedes)
        for after in [nil, "", "0", "zz", "m"] + ids.prefix(20).map(Optional.some) {
            let page = tables.channels(after: after, limit: 7).map(\.id)
            #expect(page == Array(expected.filter { ChannelTables.precedes(after ?? "", $0) }.prefix(7)), "after \(String(describing: after))")
        }
        var walked: [String] = []
        while let last = tables.channels(after: walked.last, limit: 13).last.map({ $0.id }) {
            walked += tables.channels(after: walked.last, limit: 13).map(\.id)
            #expect(walked.last == last)
        }
        #expect(walked == expected)
    }
}
