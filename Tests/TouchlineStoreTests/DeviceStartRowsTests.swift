import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
@testable import TouchlineStore

/// The record of the devices started into each APNs channel (``GenerationStartRows``): keyed in
/// the tokens' order, written a run a save, exact for any tokens, and still answering for the
/// starts a version-12 file recorded without the head and a version-13 file a row each.
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

    /// An earlier version's starts are still found after the upgrade, beside the runs recorded
    /// since, and forgotten with their channel: version 12's keyed without the head, version
    /// 13's a row each.
    @Test(arguments: [12, 13])
    func anEarlierVersionsStartsAreStillFound(version: Int) async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("registry.sqlite")
        let before = "ab" + String(repeating: "01", count: 31)
        let since = "cd" + String(repeating: "02", count: 31)
        do {
            let writer = try StoreWriter(path: path)
            writer.close()
            let old = try SQLiteConnection(path: path)
            if version == 12 {
                try old.execute("DROP TABLE device_start_runs; DROP TABLE device_starts; PRAGMA user_version = 12")
                try old.run("INSERT INTO generation_starts (channel_key, token_key) VALUES (?, ?)",
                            [.integer(Self.referenceKey("gen-1")), .integer(Self.referenceKey(before))])
            } else {
                try old.execute("DROP TABLE device_start_runs; PRAGMA user_version = 13")
                try old.run("INSERT INTO device_starts (channel_key, token_head, token_key) VALUES (?, ?, ?)",
                            [.integer(Self.referenceKey("gen-1")), .integer(Self.head(before)), .integer(Self.referenceKey(before))])
            }
            old.close()
        }
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit([.recordStarts(channel: "gen-1", tokens: [since])])
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        #expect(try SQLiteConnection(path: path).query("PRAGMA user_version") { $0.int64(at: 0) } == [14])
        #expect(try reader.startedTokens(among: [before, since, "ef" + before], into: "gen-1") == [before, since])

        try await writer.submit([.forgetStarts(channel: "gen-1")])
        #expect(try !reader.hasStarts(into: "gen-1"))
        #expect(try reader.startedTokens(among: [before, since], into: "gen-1").isEmpty)
    }

    /// A save with more starts than a run takes (after failed saves, its starts add up) is
    /// written as several runs, and every start is found; a run that is not whole starts is
    /// named rather than read.
    @Test func aSaveLargerThanARunIsWrittenAsSeveralAndADamagedRunIsNamed() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("registry.sqlite")
        var random = SplitMix64(seed: 14)
        let tokens = (0..<(DeviceStartRun.maximumStarts + 500)).map { _ in Self.randomToken(&random, hexDigits: 64) }
        let others = (0..<500).map { _ in Self.randomToken(&random, hexDigits: 64) }
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit([.recordStarts(channel: "gen-1", tokens: tokens)])
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        let runs = try SQLiteConnection(path: path).query("SELECT count(*) FROM device_start_runs") { $0.int64(at: 0) }
        #expect(runs == [2])
        #expect(try reader.startedTokens(among: tokens + others, into: "gen-1") == Set(tokens))

        let damaged = try SQLiteConnection(path: path)
        try damaged.run("UPDATE device_start_runs SET starts = substr(starts, 1, 15)")
        damaged.close()
        #expect { _ = try reader.startedTokens(among: tokens, into: "gen-1") } throws: { error in
            "\(error)".contains("not whole starts")
        }
    }

    /// A run finds exactly the starts written into it, at its ends and between neighbours that
    /// share a head, and nothing else.
    @Test func aRunFindsExactlyItsStarts() {
        var random = SplitMix64(seed: 15)
        var starts: [DeviceStartRun.Start] = [(Int64.min, Int64.min), (Int64.max, Int64.max), (0, -1), (0, 1)]
        for _ in 0..<2_000 { starts.append((Int64(bitPattern: random.next()), Int64(bitPattern: random.next()))) }
        for _ in 0..<200 { starts.append((42, Int64(bitPattern: random.next()))) }
        let (kept, left) = (starts.enumerated().filter { $0.offset % 3 != 1 }.map(\.element), starts.enumerated().filter { $0.offset % 3 == 1 }.map(\.element))
        let run = DeviceStartRun.encode(kept.sorted { ($0.head, $0.key) < ($1.head, $1.key) }[...])
        run.withUnsafeBytes { run in
            #expect(DeviceStartRun.isWellFormed(run) && run.count == kept.count * DeviceStartRun.bytesPerStart)
            #expect(kept.allSatisfy { DeviceStartRun.contains($0, in: run) })
            #expect(!left.contains { DeviceStartRun.contains($0, in: run) })
        }
        #expect(!DeviceStartRun.contains((0, 1), in: UnsafeRawBufferPointer(start: nil, count: 0)))
    }

    /// The head as version 13 stored it: the first 16 hex digits, the top bit flipped.
    static func head(_ token: String) -> Int64 {
        Int64(bitPattern: UInt64(token.prefix(16), radix: 16)! ^ (1 << 63))
    }
}

private extension Array {
    func chunked(into size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
