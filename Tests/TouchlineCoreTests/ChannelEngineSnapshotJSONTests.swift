import Foundation
import Testing
import TouchlineCore

/// The snapshot's own writer (``ChannelEngine/Snapshot/encodedJSON``) against its `Codable`
/// form, over seeded snapshots of every shape: what it writes decodes to the same snapshot, and
/// is the same JSON value `JSONEncoder` with sorted keys writes (the same members in the same
/// order; only the escaping of `/` differs in the bytes).
@Suite("Channel engine snapshot JSON")
struct ChannelEngineSnapshotJSONTests {
    /// Texts that need escaping or are not ASCII, beside plain ones.
    static let texts = ["", "2H", "a/b", "say \"hi\"", "back\\slash", "tab\there", "line\nbreak", "\u{01}", "é", "⚽️ 1–0", "{\"score\":1}"]

    struct Draw {
        var random: SplitMix64

        mutating func chance() -> Bool { random.next() % 2 == 0 }
        mutating func integer() -> Int64 { Int64(bitPattern: random.next()) >> Int64(random.next() % 40) }
        mutating func small() -> Int64 { Int64(random.next() % 1_000) }
        mutating func text() -> String { ChannelEngineSnapshotJSONTests.texts[Int(random.next() % UInt64(ChannelEngineSnapshotJSONTests.texts.count))] }
        /// A content-state as saved: JSON text.
        mutating func state() -> JSONValue {
            .string(String(decoding: JSONValue.object([.init("clock", .integer(small())), .init("note", .string(text()))]).encoded, as: UTF8.self))
        }
        mutating func alertText() -> JSONValue {
            chance() ? .string(text()) : .object([.init("loc-args", .array((0..<random.next() % 3).map { _ in .string(text()) })),
                                                  .init("loc-key", .string(text()))])
        }

        /// A snapshot in its saved shape, every optional member present or not.
        mutating func snapshot() -> JSONValue {
            var members: [JSONValue.Member] = [
                .init("counters", .object(["budgetDowngrades", "coalesced", "dropped", "eventsApplied", "immediatePushes", "lowImportanceDeferrals",
                                           "powerConsideratePushes", "rateLimitDeferrals", "rejectedTooLarge", "reservedPushes", "retries",
                                           "stateChanges", "throttled", "unchangedStates"].map { .init($0, .integer(small())) })),
            ]
            if chance() { members.append(.init("deleteAt", .integer(integer()))) }
            members.append(.init("jitterSeed", .raw(Array(String(random.next()).utf8))))
            if chance() { members.append(.init("lastAcceptedAt", .integer(integer()))) }
            if chance() { members.append(.init("lastSentState", state())) }
            if chance() { members.append(.init("lastTimestamp", .integer(small()))) }
            if chance() { members.append(.init("latestState", state())) }
            var limiter: [JSONValue.Member] = []
            if chance() { limiter.append(.init("blockedUntil", .integer(integer()))) }
            limiter += [.init("consecutiveFailures", .integer(small())), .init("refillAnchor", .integer(integer())),
                        .init("reservedRefillAnchor", .integer(integer())), .init("reservedTokens", .integer(small())),
                        .init("successesSinceStep", .integer(small())), .init("throttleLevel", .integer(small())), .init("tokens", .integer(small()))]
            members.append(.init("limiter", .object(limiter)))
            if chance() {
                var pending: [JSONValue.Member] = []
                let importance = ["critical", "normal", "low"][Int(random.next() % 3)]
                // Only a critical push keeps its alert.
                if importance == "critical", chance() {
                    var alert: [JSONValue.Member] = [.init("body", alertText())]
                    if chance() { alert.append(.init("sound", .string(text()))) }
                    alert.append(.init("title", alertText()))
                    pending.append(.init("alert", .object(alert)))
                }
                pending.append(.init("deferred", .bool(chance())))
                if chance() { pending.append(.init("dismissAt", .integer(integer()))) }
                pending += [.init("importance", .string(importance)), .init("isEnd", .bool(chance())), .init("state", state())]
                members.append(.init("pending", .object(pending)))
            }
            members.append(.init("phase", .string(["live", "ending", "ended", "closed", "broken"][Int(random.next() % 5)])))
            members.append(.init("prioritySpends", .array((0..<random.next() % 4).map { _ in .integer(integer()) })))
            members.append(.init("sequence", .raw(Array(String(random.next()).utf8))))
            return .object(members)
        }
    }

    @Test func theWriterGivesWhatTheCodableFormReadsAndTheSameJSONAsJSONEncoder() throws {
        var draw = Draw(random: SplitMix64(seed: 34))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var shapes = Set<[String]>()
        for index in 0..<2_000 {
            let saved = draw.snapshot()
            let snapshot = try JSONDecoder().decode(ChannelEngine.Snapshot.self, from: Data(saved.encoded))
            let written = snapshot.encodedJSON
            #expect(try JSONDecoder().decode(ChannelEngine.Snapshot.self, from: Data(written)) == snapshot, "snapshot \(index)")
            let byFoundation = try JSONParser.parse(Array(try encoder.encode(snapshot)))
            #expect(try JSONParser.parse(written) == byFoundation, "snapshot \(index): \(String(decoding: written, as: UTF8.self))")
            #expect(try JSONParser.parse(snapshot.counters.encodedJSON) == JSONParser.parse(Array(try encoder.encode(snapshot.counters))))
            if case .object(let members) = byFoundation { shapes.insert(members.map(\.name)) }
        }
        // Every optional member was both present and absent.
        #expect(shapes.count > 30, "\(shapes.count) shapes")
    }
}
