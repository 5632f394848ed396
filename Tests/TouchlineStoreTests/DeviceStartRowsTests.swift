import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
@testable import TouchlineStore

/// The record of the devices started into each APNs channel (``GenerationStartRows``): keyed in
/// the tokens' order, exact for any tokens, and still answering for the starts a version-12
/// file recorded without the head.
@Suite struct DeviceStartRowsTests {
    /// FNV-1a of the lowercased text: what version 11 keyed its rows by, written here again as
    /// the reference.
    static func referenceKey(_ text: String) -> Int64 {
        Int64(bitPattern: text.lowercased().utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 })
    }

    static func randomToken(_ random: inout SplitMix64, hexDigits: Int) -> String {
        String((0..<hexDigits).map { _ in "0123456789abcdef".randomElement(using: &random)! })
    }

    @Test func headsFollowTheTokensOrder() {
        var random = SplitMix64(seed: 34)
        var tokens = (0..<5_000).map { _ in Self.randomToken(&random, hexDigits: 2 * Int.random(in: 32...100, using: &random)) }
        tokens += (1...500).map { String(format: "%064x", $0) } + ["", "a", "ff", "0000000000000000", "ffffffffffffffff"]
        tokens.sort()
        let heads = tokens.map(GenerationStartRows.head)
        #expect(zip(heads, heads.dropFirst()).allSatisfy { $0 <= $1 }, "the heads of tokens in order are in order")
        #expect(GenerationStartRows.head("ABCDEF0123456789ab") == GenerationStartRows.head("abcdef0123456789cd"),
                "a head ignores case and what follows its 16 digits")
    }

    @Test func keysAreVersionElevensForAnyText() {
        var random = SplitMix64(seed: 11)
        let alphabet = Array("0123456789abcdefABCDEF:-_ éÉßİ")
        for _ in 0..<2_000 {
            let text = String((0..<Int.random(in: 0...80, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            #expect(GenerationStartRows.key(text) == Self.referenceKey(text), "\(text)")
        }
    }

    /// Random tokens and tokens sharing their head, recorded over several saves in any order and
    /// looked up in any case: exactly those recorded are started, per channel.
    @Test func startsRecordedOverSavesAreExactlyThoseFound() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("registry.sqlite")
        var random = SplitMix64(seed: 13)
        let randomTokens = (0..<3_000).map { _ in Self.randomToken(&random, hexDigits: 64) }
        let sharedHead = (1...3_000).map { String(format: "%064x", $0) }
        // The lowest and highest heads there are: written and read as JSON's widest integers.
        let extremes = [String(repeating: "0", count: 64), String(repeating: "f", count: 64)]
        let all = randomTokens + sharedHead + extremes
        let started = Set(all.shuffled(using: &random).prefix(4_000) + extremes)
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        for save in Array(started).chunked(into: 700) {
            try await writer.submit([.recordStarts(channel: "gen-1", tokens: save)])
        }
        try await writer.submit([.recordStarts(channel: "gen-2", tokens: [all[0]])])
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }

        let found = try reader.startedTokens(among: all.map { $0.uppercased() }, into: "gen-1")
        #expect(found == Set(started.map { $0.uppercased() }))
        #expect(try reader.startedTokens(among: all, into: "gen-2") == [all[0]])
        #expect(try reader.startedTokens(among: all, into: "gen-3").isEmpty)
        #expect(try reader.hasStarts(into: "gen-1") && !reader.hasStarts(into: "gen-3"))

        try await writer.submit([.forgetStarts(channel: "gen-1")])
        #expect(try !reader.hasStarts(into: "gen-1"))
        #expect(try reader.startedTokens(among: all, into: "gen-1").isEmpty)
        #expect(try reader.startedTokens(among: all, into: "gen-2") == [all[0]], "another channel's starts stay")
    }

    /// A version-12 file's starts, keyed without the head, are still found after the upgrade,
    /// beside those recorded since, and forgotten with their channel.
    @Test func aVersionTwelveFilesStartsAreStillFound() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("registry.sqlite")
        let before = "ab" + String(repeating: "01", count: 31)
        let since = "cd" + String(repeating: "02", count: 31)
        do {
            let writer = try StoreWriter(path: path)
            writer.close()
            let old = try SQLiteConnection(path: path)
            try old.execute("DROP TABLE device_starts; PRAGMA user_version = 12")
            try old.run("INSERT INTO generation_starts (channel_key, token_key) VALUES (?, ?)",
                        [.integer(Self.referenceKey("gen-1")), .integer(Self.referenceKey(before))])
            old.close()
        }
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit([.recordStarts(channel: "gen-1", tokens: [since])])
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        #expect(try SQLiteConnection(path: path).query("PRAGMA user_version") { $0.int64(at: 0) } == [13])
        #expect(try reader.startedTokens(among: [before, since, "ef" + before], into: "gen-1") == [before, since])

        try await writer.submit([.forgetStarts(channel: "gen-1")])
        #expect(try !reader.hasStarts(into: "gen-1"))
        #expect(try reader.startedTokens(among: [before, since], into: "gen-1").isEmpty)
    }
}

private extension Array {
    func chunked(into size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
