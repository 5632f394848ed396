import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A partitioned registry's user directory (docs/cluster.md, "The partitioned token registry"):
/// applied in any order, the notes replace the same tokens the whole registry's rule replaces.
@Suite struct UserDirectoryTests {
    /// One partition's file of a partitioned registry, and how far its log was applied.
    final class PartitionFile {
        let writer: StoreWriter
        var sequence: UInt64 = 0

        init(path: String) throws { writer = try StoreWriter(path: path) }

        func apply(_ operations: [TokenOperation]) throws {
            guard let entry = RegistryEntry(operations) else { return }
            sequence += 1
            let (at, previous) = (sequence, sequence - 1)
            _ = try waitForCompletion { writer.applyRegistryEntry(entry, sequence: at, previous: previous, rules: .partition, completion: $0) }.get()
        }

        func pending() throws -> [TokenOperation] { try waitForCompletion { writer.pendingSupersessions(limit: 1_000, completion: $0) }.get() }

        func forget(_ logged: [TokenOperation]) throws { try waitForCompletion { writer.forgetSupersessions(logged, completion: $0) }.get() }
    }

    static let partitioning = TokenPartitioning(ChannelPartitioning(count: 4)!)

    /// Registrations with re-registrations, tokens moving between users and kinds, both token
    /// kinds, two apps and two activities, at distinct times in time order.
    static func registrations(seed: UInt64) -> [TokenRecord] {
        var random = SplitMix64(seed: seed)
        let tokens = (0..<24).map { _ in String(format: "%016llx", random.next()) + String(repeating: "0", count: 48) }
        return (0..<150).map { index in
            let kind: TokenKind = random.next() % 3 == 0 ? .update : .pushToStart
            let user = random.next() % 8 == 0 ? nil : "user-\(random.next() % 5)"
            return TokenRecord(token: tokens[Int(random.next() % UInt64(tokens.count))], kind: kind,
                               channelID: kind == .update ? "match-\(random.next() % 2)" : nil, userID: user,
                               registeredAt: t0 + .milliseconds(Int64(index)), app: random.next() % 4 == 0 ? "tv" : "default")
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func notesInAnyOrderReplaceWhatTheWholeRegistryReplaces(seed: UInt64) async throws {
        let dir = TemporaryDirectory()
        let registrations = Self.registrations(seed: seed)
        let whole = try StoreWriter(path: dir.file("whole.sqlite"))
        defer { whole.close() }
        for record in registrations { try await whole.submit([.registerToken(record)]) }

        let files = try (0..<Self.partitioning.count).map { try PartitionFile(path: dir.file("p\($0).sqlite")) }
        defer { files.forEach { $0.writer.close() } }
        // Each partition's log: its registrations in time order (one token's stay in order, as
        // its gateways' writes would), the users' notes anywhere between them, shuffled.
        var random = SplitMix64(seed: seed &+ 100)
        var logs = Array(repeating: [TokenOperation](), count: Self.partitioning.count)
        for record in registrations { logs[Self.partitioning.partition(ofToken: record.token)].append(.registerToken(record)) }
        for note in registrations.compactMap(UserTokenNote.init(of:)).shuffled(using: &random) {
            let partition = Self.partitioning.partition(ofUser: note.userID)
            logs[partition].insert(.noteUserToken(note), at: Int(random.next() % UInt64(logs[partition].count + 1)))
        }
        // Entries of one to three operations, the partitions' logs applied in turns; each
        // partition logs the replacements it decided to the replaced tokens' partitions.
        var positions = Array(repeating: 0, count: logs.count)
        while positions.indices.contains(where: { positions[$0] < logs[$0].count }) {
            for partition in logs.indices where positions[partition] < logs[partition].count {
                let end = min(logs[partition].count, positions[partition] + 1 + Int(random.next() % 3))
                try files[partition].apply(Array(logs[partition][positions[partition]..<end]))
                positions[partition] = end
                if random.next() % 2 == 0 { try Self.logSupersessions(of: files[partition], to: files) }
            }
        }
        for file in files { try Self.logSupersessions(of: file, to: files) }
        #expect(try files.allSatisfy { try $0.pending().isEmpty })

        let reference = try Self.tokens(in: [whole.path])
        let partitioned = try Self.tokens(in: files.map(\.writer.path))
        #expect(reference.count == Set(registrations.map(\.token)).count && partitioned.count == reference.count)
        for (token, expected) in reference {
            let found = partitioned[token]
            #expect(found?.active == expected.active && found?.userID == expected.userID && found?.kind == expected.kind,
                    "\(token.prefix(16)): \(String(describing: found)) where the whole registry has \(expected)")
            if let found, !found.active { #expect(found.deactivatedAt.map { $0 >= found.registeredAt } == true) }
        }
    }

    static func logSupersessions(of file: PartitionFile, to files: [PartitionFile]) throws {
        let pending = try file.pending()
        var byPartition: [Int: [TokenOperation]] = [:]
        for operation in pending {
            guard case .supersedeToken(let replaced, _) = operation else { continue }
            byPartition[partitioning.partition(ofToken: replaced.token), default: []].append(operation)
        }
        for (partition, operations) in byPartition { try files[partition].apply(operations) }
        try file.forget(pending)
    }

    static func tokens(in paths: [String]) throws -> [String: TokenRecord] {
        var tokens: [String: TokenRecord] = [:]
        for path in paths {
            let reader = try SQLiteTokenReader(path: path)
            defer { reader.close() }
            for record in try reader.tokens(after: nil, limit: 10_000) { tokens[record.token] = record }
        }
        return tokens
    }

    @Test func aReplacementAppliesOnlyToATokenStillRegisteredAsItWasNoted() async throws {
        let dir = TemporaryDirectory()
        let file = try PartitionFile(path: dir.file("p.sqlite"))
        defer { file.writer.close() }
        let token = hexToken(1).lowercased()
        try file.apply([.registerToken(TokenRecord(token: token, kind: .pushToStart, userID: "ann", registeredAt: t0 + .seconds(5)))])
        let read = { try #require(try Self.tokens(in: [file.writer.path])[token]) }
        func replaced(user: String = "ann", app: String = "default", kind: TokenKind = .pushToStart) -> UserTokenNote {
            UserTokenNote(userID: user, token: token, kind: kind, channelID: kind == .update ? "match-1" : nil, app: app, registeredAt: t0)
        }
        for (other, why) in [(replaced(user: "bob"), "another user's"), (replaced(app: "tv"), "another app's"),
                             (replaced(kind: .update), "an update token's")] {
            try file.apply([.supersedeToken(other, registeredBefore: t0 + .seconds(9))])
            #expect(try read().active, "\(why) replacement")
        }
        try file.apply([.supersedeToken(replaced(), registeredBefore: t0 + .seconds(4))])
        #expect(try read().active, "registered again after the replacing registration")
        try file.apply([.supersedeToken(replaced(), registeredBefore: t0 + .seconds(5))])
        #expect(try read().active == false && read().deactivatedAt == t0 + .seconds(5))
    }

    @Test func aPartitionsSnapshotCarriesItsDirectoryAndTheReplacementsNotLoggedYet() async throws {
        let dir = TemporaryDirectory()
        let source = try PartitionFile(path: dir.file("source.sqlite"))
        defer { source.writer.close() }
        let (old, new) = (hexToken(1).lowercased(), hexToken(2).lowercased())
        for (token, second) in [(old, 1), (new, 2)] {
            try source.apply([.noteUserToken(UserTokenNote(userID: "ann", token: token, kind: .pushToStart, channelID: nil, app: "default",
                                                           registeredAt: t0 + .seconds(Int64(second))))])
        }
        func replacement(of token: String, by second: Int64) -> TokenOperation {
            .supersedeToken(UserTokenNote(userID: "ann", token: token, kind: .pushToStart, channelID: nil, app: "default", registeredAt: t0 + .seconds(second)),
                            registeredBefore: t0 + .seconds(second))
        }
        #expect(try source.pending() == [replacement(of: old, by: 2)])
        let snapshot = try waitForCompletion { source.writer.readRegistrySnapshot(rules: .partition, completion: $0) }.get()
        #expect(snapshot.sequence == 2)

        let target = try PartitionFile(path: dir.file("target.sqlite"))
        defer { target.writer.close() }
        #expect(try waitForCompletion { target.writer.restoreRegistrySnapshot(snapshot, rules: .partition, completion: $0) }.get())
        #expect(try target.pending() == source.pending())
        // The restore builds the tables' indexes after their rows: every one is there again.
        #expect(try Self.indexes(of: dir.file("target.sqlite")) == Self.indexes(of: dir.file("source.sqlite")))
        // The directory came along: a third token replaces the second, and the first no more.
        target.sequence = 2
        try target.apply([.noteUserToken(UserTokenNote(userID: "ann", token: hexToken(3), kind: .pushToStart, channelID: nil, app: "default",
                                                       registeredAt: t0 + .seconds(3)))])
        #expect(try target.pending() == [replacement(of: old, by: 2), replacement(of: new, by: 3)])
        // A whole registry's snapshot has no such tables, and a partition's file refuses it.
        let whole = try waitForCompletion { source.writer.readRegistrySnapshot(completion: $0) }.get()
        let other = try StoreWriter(path: dir.file("other.sqlite"))
        defer { other.close() }
        let indexesBefore = try Self.indexes(of: dir.file("other.sqlite"))
        #expect(throws: StoreError.self) { try waitForCompletion { other.restoreRegistrySnapshot(whole, rules: .partition, completion: $0) }.get() }
        #expect(try Self.indexes(of: dir.file("other.sqlite")) == indexesBefore, "a refused restore drops no index")
    }

    /// The file's indexes with their definitions.
    private static func indexes(of path: String) throws -> [String] {
        let file = try SQLiteConnection(path: path)
        defer { file.close() }
        return try file.query("SELECT name || ': ' || sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name") { $0.text(at: 0) ?? "" }
    }

    @Test func notesAndReplacementsAreLoggedAndReadBack() throws {
        let operations: [TokenOperation] = [
            .noteUserToken(UserTokenNote(userID: "ann", token: "AB01", kind: .update, channelID: "match-1", app: "tv", registeredAt: t0)),
            .noteUserToken(UserTokenNote(userID: "bob", token: "ab02", kind: .pushToStart, channelID: nil, app: "default", registeredAt: t0 + .seconds(1))),
            .supersedeToken(UserTokenNote(userID: "ann", token: "ab03", kind: .update, channelID: nil, app: "tv", registeredAt: t0), registeredBefore: t0 + .seconds(2)),
        ]
        let entry = try #require(RegistryEntry(operations))
        #expect(try RegistryEntry(binaryEncoded: entry.binaryEncoded) == entry)
    }
}

@Suite struct PartitionedRegistryEntryTests {
    @Test func aListIsLoggedToTheTokensAndTheUsersPartitionsInListOrder() throws {
        let partitioning = TokenPartitioning(ChannelPartitioning(count: 16)!)
        let token = { (digit: Character) in String(repeating: digit, count: 64) }
        // A user placed apart from the tokens' partitions, so each partition's order shows.
        let user = try #require((0..<100).map { "user-\($0)" }.first { ![1, 10, 15].contains(partitioning.partition(ofUser: $0)) })
        let registered = TokenRecord(token: token("1"), kind: .pushToStart, userID: user, registeredAt: t0)
        let anonymous = TokenRecord(token: "12" + String(repeating: "2", count: 62), kind: .pushToStart, registeredAt: t0)
        let replaced = UserTokenNote(userID: "bob", token: token("f"), kind: .update, channelID: "match-1", app: "default", registeredAt: t0)
        let operations: [TokenOperation] = [
            .registerToken(registered), .clearTarget(jobID: "job-1", token: token("1")),
            .deactivateToken(token("a"), unlessRegisteredAfter: t0, at: t0), .registerToken(anonymous), .deleteToken(token("1")),
            .supersedeToken(replaced, registeredBefore: t0),
        ]
        let entries = RegistryEntry.partitioned(operations, by: partitioning)
        let expected: [Int: [TokenOperation]] = [1: [.registerToken(registered), .registerToken(anonymous), .deleteToken(token("1"))],
                                                 10: [.deactivateToken(token("a"), unlessRegisteredAfter: t0, at: t0)],
                                                 15: [.supersedeToken(replaced, registeredBefore: t0)],
                                                 partitioning.partition(ofUser: user): [.noteUserToken(UserTokenNote(of: registered)!)]]
        #expect(entries.mapValues(\.operations) == expected, "the job's target stays with the gateway; the user's note goes to the user's partition")
    }
}
