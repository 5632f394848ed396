import Dispatch
import Foundation
import NATS
import Synchronization
import Testing
import TestSlots
import TouchlineCore
@testable import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// A registry partition on the gateway that owns it (docs/cluster.md, "The partitioned token
/// registry"): its log written by compare-and-set under its takeover, read to the end by the next
/// owner, and its file dropped when it is let go.
@Suite("Registry partitions, on nats-server and in memory")
struct RegistryPartitionTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)
    static let partitioning = TokenPartitioning(ChannelPartitioning(count: 8)!)
    static let partition = 3
    static let layout = RegistryLogLayout()

    /// The `n`th token of partition 3 (its first digits place it there).
    static func token(_ n: Int) -> String {
        let digits = String(n, radix: 16)
        return "6" + String(repeating: "0", count: 63 - digits.count) + digits
    }

    static func registration(_ n: Int, user: String? = nil) -> TokenOperation {
        .registerToken(TokenRecord(token: token(n), kind: .pushToStart, userID: user, follows: ["team:ARS"], registeredAt: t0 + .seconds(Int64(n))))
    }

    /// One gateway's side: its loop, its connection and the directory of its files.
    final class Gateway: Sendable {
        let loop = EventLoop.start(name: "registry-partition-test")
        let jetStream: any JetStreamClient
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-partition-\(UUID().uuidString)").path

        init(_ cluster: TestNATSCluster) throws {
            jetStream = try cluster.connect(name: "registry-partition-test", loop: loop)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try RegistryPartition.ensureLogs(count: 8, jetStream: jetStream, layout: RegistryPartitionTests.layout, replicas: 1)
        }

        deinit {
            loop.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        func takeOver(_ partition: Int = RegistryPartitionTests.partition, under fence: Fence, fences: PartitionFences? = nil,
                      snapshots: SnapshotSchedule.Settings = SnapshotSchedule.Settings(), turns: SnapshotTurns? = nil,
                      faultFile: String? = nil) async throws -> RegistryPartition {
            let (jetStream, directory, loop) = (jetStream, directory, loop)
            return try await DedicatedThread.run(name: "takeover") {
                try RegistryPartition.takeOver(partition: partition, under: fence, fences: fences, jetStream: jetStream,
                                               layout: RegistryPartitionTests.layout, directory: directory, snapshots: snapshots, turns: turns,
                                               faultFile: faultFile, loop: loop)
            }
        }

        var logState: JetStream.StreamState? {
            get throws { try jetStream.streamState(RegistryPartitionTests.layout.partitionStreamName(RegistryPartitionTests.partition)) }
        }

        var messages: UInt64 {
            get throws { try jetStream.streamState(RegistryPartitionTests.layout.partitionStreamName(RegistryPartitionTests.partition))?.messages ?? 0 }
        }
    }

    @discardableResult
    static func write(_ operations: [TokenOperation], to owned: RegistryPartition) -> Result<TokenWriteSummary, StoreError> {
        waitForCompletion { owned.write(operations, completion: $0) }
    }

    static func tokens(of owned: RegistryPartition) throws -> [String: TokenRecord] {
        let reader = try SQLiteTokenReader(path: owned.path)
        defer { reader.close() }
        return Dictionary(uniqueKeysWithValues: try reader.tokens(after: nil, limit: 1_000).map { ($0.token, $0) })
    }

    @Test func theTestTokensAreOfTheirPartition() {
        #expect((1...50).allSatisfy { Self.partitioning.partition(ofToken: Self.token($0)) == Self.partition })
    }

    /// The next owner reads every entry the first logged; its takeover record shuts the first
    /// out (its next write is refused, and every write after it), and nothing of the first is
    /// stored after the record.
    @Test(arguments: NATSBackend.allCases)
    func theNextOwnerReadsTheLogAndItsRecordShutsTheFirstOut(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, b) = (try Gateway(cluster), try Gateway(cluster))
            let first = try await a.takeOver(under: Fence(Revision(5)))
            for batch in stride(from: 1, through: 40, by: 10) { _ = try Self.write((batch..<batch + 10).map { Self.registration($0) }, to: first).get() }
            let deactivated = try Self.write([.deactivateToken(Self.token(7), unlessRegisteredAfter: Self.t0 + .seconds(7), at: Self.t0 + .seconds(60))],
                                             to: first).get()
            #expect(deactivated.tokensDeactivated == 1, "the file's summary")
            #expect(try Self.tokens(of: first).count == 40, "applied once acknowledged")

            let second = try await b.takeOver(under: Fence(Revision(9)))
            let read = try Self.tokens(of: second)
            #expect(read == (try Self.tokens(of: first)) && read[Self.token(7)]?.active == false)
            let messages = try b.messages
            let deposed = Self.write([Self.registration(41)], to: first)
            #expect(deposed.failure?.description.contains("was written since this gateway read it") == true, "\(String(describing: deposed))")
            let after = Self.write([Self.registration(42)], to: first)
            #expect(after.failure != nil, "a deposed partition writes nothing more")
            #expect(try b.messages == messages, "nothing of the earlier owner after the record")
            _ = try Self.write([Self.registration(43)], to: second).get()
            #expect(try Self.tokens(of: second).count == 41)
            [first, second].forEach { $0.close(deletingFile: false) }
        }
    }

    /// A tail longer than a batch and than the client's window (150 entries, each its own) is
    /// read in several batches, in order: the next owner holds what the first did.
    @Test(arguments: NATSBackend.allCases)
    func aLongTailIsAppliedInBatchesToTheSameState(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, b) = (try Gateway(cluster), try Gateway(cluster))
            let first = try await a.takeOver(under: Fence(Revision(5)))
            let entries = RegistryPartition.replayWindow + 22
            for n in 1...entries { _ = try Self.write([Self.registration(n)], to: first).get() }
            _ = try Self.write([.deactivateToken(Self.token(70), unlessRegisteredAfter: Self.t0 + .seconds(70), at: Self.t0 + .seconds(900))],
                               to: first).get()
            let second = try await b.takeOver(under: Fence(Revision(9)))
            let read = try Self.tokens(of: second)
            let held = try Self.tokens(of: first)
            #expect(read.count == entries && read == held && read[Self.token(70)]?.active == false)
            [first, second].forEach { $0.close(deletingFile: false) }
        }
    }

    /// Lists queued while one is logged go together as one entry (one compare-and-set, one
    /// transaction): each completes, in order, and a deactivation, whose summary is its own, goes
    /// alone.
    @Test(arguments: NATSBackend.allCases)
    func listsQueuedBehindOneAreLoggedAsOneEntryEachCompleting(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let a = try Gateway(cluster)
            let owned = try await a.takeOver(under: Fence(Revision(5)))
            let before = try a.messages
            let completed = Mutex<[Int]>([])
            let summaries = Mutex<[Int: TokenWriteSummary]>([:])
            let done = DispatchGroup()
            for n in 1...40 {
                done.enter()
                let operations: [TokenOperation] = n == 20
                    ? [.deactivateToken(Self.token(3), unlessRegisteredAfter: Self.t0 + .seconds(3), at: Self.t0 + .seconds(60))]
                    : [Self.registration(n)]
                owned.write(operations) { result in
                    if case .success(let summary) = result {
                        completed.withLock { $0.append(n) }
                        summaries.withLock { $0[n] = summary }
                    }
                    done.leave()
                }
            }
            done.wait()
            #expect(completed.withLock { $0 } == Array(1...40), "each list completes, in order")
            #expect(summaries.withLock { $0[20]?.tokensDeactivated } == 1, "the deactivation's own summary")
            #expect(summaries.withLock { $0.filter { $0.key != 20 }.allSatisfy { $0.value.tokensDeactivated == 0 } })
            let logged = try a.messages - before
            #expect(logged < 40 && logged >= 3, "40 lists logged as \(logged) entries")
            #expect(try Self.tokens(of: owned).count == 39)
            owned.close(deletingFile: false)
        }
    }

    /// A file kept from an earlier ownership takes up the log after it; a partition let go drops
    /// its file.
    @Test(arguments: NATSBackend.allCases)
    func aKeptFileTakesUpTheRestAndALetGoFileIsDropped(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, b) = (try Gateway(cluster), try Gateway(cluster))
            var first = try await a.takeOver(under: Fence(Revision(5)))
            _ = try Self.write((1...10).map { Self.registration($0, user: "ann") }, to: first).get()
            first.close(deletingFile: false)
            let second = try await b.takeOver(under: Fence(Revision(9)))
            _ = try Self.write([.deleteToken(Self.token(1))] + (11...20).map { Self.registration($0) }, to: second).get()
            second.close(deletingFile: true)
            #expect(!FileManager.default.fileExists(atPath: second.path), "let go: the file is dropped")

            first = try await a.takeOver(under: Fence(Revision(12)))
            let tokens = try Self.tokens(of: first)
            #expect(tokens.count == 19 && tokens[Self.token(1)] == nil)
            #expect(tokens.values.filter(\.active).count == 19, "a partition's registrations replace no user's token themselves")
            first.close(deletingFile: true)
        }
    }

    /// Snapshots in parts keep the log short: a new owner restores the newest and reads only the
    /// entries after it, to the same tokens, directory and pending replacements.
    @Test(arguments: NATSBackend.allCases)
    func aNewOwnerRestoresTheNewestSnapshotAndReadsOnlyTheEntriesAfterIt(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, b) = (try Gateway(cluster), try Gateway(cluster))
            // A file's image is a few hundred KiB even this small (a page for each of the store's tables and indexes).
            let small = SnapshotSchedule.Settings(minimumLogBytes: 2_000, maximumPartBytes: 16 << 10)
            let first = try await a.takeOver(under: Fence(Revision(5)), snapshots: small)
            for n in 1...60 {
                // Users whose directory is this partition's too, so a note replaces one of theirs.
                let user = "fan-\(n % 7)"
                var operations = [Self.registration(n, user: user)]
                if Self.partitioning.partition(ofUser: user) == Self.partition, let note = UserTokenNote(of: TokenRecord(
                    token: Self.token(n), kind: .pushToStart, userID: user, registeredAt: Self.t0 + .seconds(Int64(n)))) {
                    operations.append(.noteUserToken(note))
                }
                _ = try Self.write(operations, to: first).get()
            }
            try await eventually("a snapshot written and the log trimmed below it", timeout: .seconds(10)) {
                try first.snapshotStatistics.written >= 1 && (a.logState?.firstSequence ?? 0) > 1
            }
            #expect(first.snapshotStatistics.writtenInParts >= 1 && first.snapshotStatistics.failed == 0)
            _ = try Self.write([Self.registration(61)], to: first).get()
            let trimmedTo = try #require(try a.logState?.firstSequence)

            let second = try await b.takeOver(under: Fence(Revision(9)), snapshots: small)
            #expect(second.snapshotStatistics.restored == 1, "its file was behind the trim at \(trimmedTo)")
            #expect(try Self.tokens(of: second) == Self.tokens(of: first) && Self.tokens(of: second).count == 61)
            let pending = { (owned: RegistryPartition) in
                try SQLiteConnection(path: owned.path).query("SELECT user_id, token, registered_before FROM token_supersessions ORDER BY user_id, token") {
                    "\($0.text(at: 0) ?? "") \($0.text(at: 1) ?? "") \($0.int64(at: 2))"
                }
            }
            #expect(try pending(second) == pending(first) && !pending(second).isEmpty, "the directory and its replacements came along")
            // The image it restored counts as its last snapshot: entries past the minimum but far
            // below the image's weight write none (each write waits its turn behind a snapshot due).
            for n in 62...100 { _ = try Self.write([Self.registration(n)], to: second).get() }
            #expect(second.snapshotStatistics.written == 0, "\(second.takeoverFigures)")
            [first, second].forEach { $0.close(deletingFile: true) }
        }
    }

    /// An entry the log acknowledged but the file could not apply stops the partition: its list
    /// and every later one are told to retry (none is refused for the gap it would find), the
    /// owner is told, and taken up again the file reads the log on from where it stopped.
    @Test(arguments: NATSBackend.allCases)
    func anEntryTheFileCouldNotApplyStopsThePartitionUntilItIsTakenUpAgain(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let gateway = try Gateway(cluster)
            let fault = gateway.directory + "/disk-full"
            let owned = try await gateway.takeOver(under: Fence(Revision(5)), faultFile: fault)
            let told = Mutex<[Int]>([])
            try gateway.loop.sync { owned.onFileBehind = { partition in told.withLock { $0.append(partition) } } }
            _ = try Self.write([Self.registration(1)], to: owned).get()
            #expect(FileManager.default.createFile(atPath: fault, contents: nil))
            let failed = Self.write([Self.registration(2)], to: owned)
            try FileManager.default.removeItem(atPath: fault)
            let after = Self.write([Self.registration(3)], to: owned)
            for result in [failed, after] {
                #expect(result.failure?.isStorageFailure == true, "told to retry: \(String(describing: result))")
                #expect(result.failure?.description.contains(StoreWriter.registryLogGap) == false)
            }
            #expect(told.withLock { $0 } == [Self.partition])
            #expect(try Self.tokens(of: owned).keys.sorted() == [Self.token(1)], "nothing applied past the gap")
            owned.close(deletingFile: false)

            let again = try await gateway.takeOver(under: Fence(Revision(5)))
            #expect(try Self.tokens(of: again).keys.sorted() == [Self.token(1), Self.token(2)], "the logged entry read into the file")
            _ = try Self.write([Self.registration(3)], to: again).get()
            again.close(deletingFile: true)
        }
    }

    /// A gateway's partitions log their snapshots one at a time: each gets its turn, and gives it
    /// back when its snapshot ends, so every partition keeps getting snapshots.
    @Test(arguments: NATSBackend.allCases)
    func aGatewaysPartitionsTakeTurnsAtTheirSnapshots(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let gateway = try Gateway(cluster)
            let turns = SnapshotTurns(loop: gateway.loop)
            let small = SnapshotSchedule.Settings(minimumLogBytes: 2_000, maximumPartBytes: 16 << 10)
            let third = try await gateway.takeOver(under: Fence(Revision(5)), snapshots: small, turns: turns)
            let second = try await gateway.takeOver(2, under: Fence(Revision(5)), snapshots: small, turns: turns)
            // Partition 2's tokens: the same digits, led by a 4.
            let ofSecond = { (n: Int) in TokenOperation.registerToken(TokenRecord(token: "4" + Self.token(n).dropFirst(), kind: .pushToStart,
                                                                                     registeredAt: Self.t0 + .seconds(Int64(n)))) }
            #expect(Self.partitioning.partition(ofToken: "4" + Self.token(1).dropFirst()) == 2)
            for n in 1...60 {
                // Both partitions' writes at once, so both come due while the other may hold the turn.
                let written = DispatchGroup()
                let results = Mutex<[Result<TokenWriteSummary, StoreError>]>([])
                for (owned, operation) in [(third, Self.registration(n)), (second, ofSecond(n))] {
                    written.enter()
                    owned.write([operation]) { result in
                        results.withLock { $0.append(result) }
                        written.leave()
                    }
                }
                written.wait()
                for result in results.withLock({ $0 }) { _ = try result.get() }
            }
            try await eventually("both partitions snapshotted, one at a time", timeout: .seconds(10)) {
                third.snapshotStatistics.written >= 1 && second.snapshotStatistics.written >= 1
                    && (try? gateway.loop.sync { turns.waitingCount }) == 0
            }
            #expect(third.snapshotStatistics.failed == 0 && second.snapshotStatistics.failed == 0)
            [third, second].forEach { $0.close(deletingFile: true) }
        }
    }

    @Test func aTurnIsGivenOnceTheOneBeforeEndsInTheOrderAsked() async throws {
        let loop = EventLoop.start(name: "snapshot-turns-test")
        defer { loop.stop() }
        let turns = SnapshotTurns(loop: loop)
        let order = Mutex<[String]>([])
        try loop.sync {
            turns.take { order.withLock { $0.append("a") } }
            turns.take { order.withLock { $0.append("b") } }
            turns.take { order.withLock { $0.append("c") } }
            #expect(order.withLock { $0 } == ["a"], "one at a time")
            turns.done()
            #expect(order.withLock { $0 } == ["a"], "the next turn runs on a later pass, not inside done()")
        }
        try await eventually("b's turn") { order.withLock { $0 } == ["a", "b"] }
        try loop.sync { turns.done() }
        try await eventually("c's turn") { order.withLock { $0 } == ["a", "b", "c"] }
        try loop.sync {
            turns.done()
            turns.take { order.withLock { $0.append("d") } }
        }
        #expect(order.withLock { $0 } == ["a", "b", "c", "d"], "free again: a turn is given at once")
    }

    /// An entry is sent only while the takeover's fence holds; a lapsed one sends nothing.
    @Test(arguments: NATSBackend.allCases)
    func aWriteIsSentOnlyWhileTheTakeoversFenceHolds(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let gateway = try Gateway(cluster)
            let fences = PartitionFences(partitions: 8)
            fences.update([Self.partition: (Fence(Revision(5)), ContinuousClock.now + .seconds(3_600))])
            let owned = try await gateway.takeOver(under: Fence(Revision(5)), fences: fences)
            _ = try Self.write([Self.registration(1)], to: owned).get()
            let messages = try gateway.messages
            fences.update([:])
            let lapsed = Self.write([Self.registration(2)], to: owned)
            #expect(lapsed.failure?.description.contains("no longer holds; the write is dropped") == true, "\(String(describing: lapsed))")
            #expect(try gateway.messages == messages)
            await #expect(throws: StoreError.self, "nor is it taken over under a fence it does not hold") {
                try await gateway.takeOver(under: Fence(Revision(8)), fences: fences)
            }
            owned.close(deletingFile: true)
        }
    }

    /// A file that holds more of the partition than its log (another cluster's, or a stream
    /// made again) is refused, naming both.
    @Test(arguments: NATSBackend.allCases)
    func aFileAheadOfTheLogIsRefused(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let gateway = try Gateway(cluster)
            let owned = try await gateway.takeOver(under: Fence(Revision(5)))
            _ = try Self.write([Self.registration(1)], to: owned).get()
            owned.close(deletingFile: false)
            // The same file, and another cluster's logs (their names start with another prefix).
            let other = RegistryLogLayout(prefix: "other")
            try RegistryPartition.ensureLogs(count: 8, jetStream: gateway.jetStream, layout: other, replicas: 1)
            let (jetStream, directory, loop) = (gateway.jetStream, gateway.directory, gateway.loop)
            await #expect {
                try await DedicatedThread.run(name: "takeover") {
                    try RegistryPartition.takeOver(partition: Self.partition, under: Fence(Revision(6)), fences: nil, jetStream: jetStream,
                                                   layout: other, directory: directory, loop: loop)
                }
            } throws: { error in
                "\(error)".contains("holds registry partition 3 up to log sequence 2, but OTHER_TOKENS_3 ends at 0")
            }
        }
    }
}

/// Lists of registry operations reach their partitions wherever they are owned: here, or at
/// the owner over request-reply; a partition moves with its tokens.
@Suite("Partitioned registry, on nats-server and in memory")
struct PartitionedRegistryTests {
    static let partitioning = TokenPartitioning(ChannelPartitioning(count: 8)!)
    static let t0 = UnixTime(seconds: 1_767_225_600)

    /// Two gateways: the first owning partitions 0 to 3, the second 4 to 7.
    static func twoGateways(_ cluster: TestNATSCluster) async throws -> (Gateway, Gateway) {
        let (a, b) = (try Gateway(cluster), try Gateway(cluster))
        try await a.takeUp(0..<4, fence: 5)
        try await b.takeUp(4..<8, fence: 5)
        return (a, b)
    }

    /// A push-to-start registration of `token` at `t0` plus `second` seconds.
    static func registration(_ token: String, user: String? = nil, follows: [String] = [], at second: Int64 = 0) -> TokenOperation {
        .registerToken(TokenRecord(token: token, kind: .pushToStart, userID: user, follows: follows, registeredAt: t0 + .seconds(second)))
    }

    /// A token of `partition` (of 8): its first digit places it.
    static func token(_ n: Int, in partition: Int) -> String {
        let digits = String(n, radix: 16)
        return String(partition * 2, radix: 16) + String(repeating: "0", count: 63 - digits.count) + digits
    }

    final class Gateway: Sendable {
        let loop = EventLoop.start(name: "partitioned-registry-test")
        let registry: PartitionedRegistry
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-partitioned-\(UUID().uuidString)").path

        /// `keptFileLifetime`: how long a partition let go keeps its file (``PartitionedRegistry/keptFileLifetime``).
        init(_ cluster: TestNATSCluster, keptFileLifetime: Duration = .zero, takeUpsAtOnce: Int = PartitionedRegistry.takeUpsAtOnce) throws {
            let jetStream = try cluster.connect(name: "partitioned-registry-test", loop: loop)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try RegistryPartition.ensureLogs(count: 8, jetStream: jetStream, layout: RegistryLogLayout(), replicas: 1)
            registry = PartitionedRegistry(jetStream: jetStream, connection: jetStream.messaging, layout: RegistryLogLayout(),
                                           partitioning: PartitionedRegistryTests.partitioning, directory: directory, fences: nil,
                                           keptFileLifetime: keptFileLifetime, takeUpsAtOnce: takeUpsAtOnce, loop: loop)
        }

        deinit {
            registry.close()
            loop.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        func takeUp(_ partitions: some Sequence<Int>, fence: Int) async throws {
            for partition in partitions {
                let registry = registry
                _ = try await DedicatedThread.run(name: "take-up") { try registry.takeUp(partition, under: Fence(Revision(UInt64(fence)))) }
            }
        }

        func log(_ operations: [TokenOperation]) -> Result<TokenWriteSummary, StoreError> {
            waitForCompletion { registry.log(operations, completion: $0) }
        }

        /// The tokens in this gateway's file of `partition`.
        func tokens(of partition: Int) throws -> [TokenRecord] {
            let reader = try SQLiteTokenReader(path: RegistryPartition.path(of: partition, in: directory))
            defer { reader.close() }
            return try reader.tokens(after: nil, limit: 1_000)
        }
    }

    @Test func theTestTokensAreOfTheirPartitions() {
        #expect((0..<8).allSatisfy { partition in Self.partitioning.partition(ofToken: Self.token(5, in: partition)) == partition })
    }

    @Test(arguments: NATSBackend.allCases)
    func aListReachesEveryPartitionWhereverItIsOwnedAndAPartitionMovesWithItsTokens(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, b) = try await Self.twoGateways(cluster)
            let registrations = (0..<8).flatMap { partition in (1...5).map { Self.registration(Self.token($0, in: partition), user: "fan-\($0)", at: Int64($0)) } }
            _ = try a.log(registrations).get()
            for partition in 0..<8 {
                let holder = partition < 4 ? a : b
                #expect(try holder.tokens(of: partition).map(\.token) == (1...5).map { Self.token($0, in: partition) },
                        "partition \(partition), through \(partition < 4 ? "the gateway asked" : "its owner")")
            }
            let deactivated = try b.log([.deactivateToken(Self.token(3, in: 1), unlessRegisteredAfter: Self.t0 + .seconds(3), at: Self.t0 + .seconds(9))]).get()
            #expect(deactivated.tokensDeactivated == 1, "the owner's summary comes back")

            // Partition 2 moves from a to b: its file goes (kept no time here), b reads its log.
            a.registry.letGo(2)
            #expect(!FileManager.default.fileExists(atPath: RegistryPartition.path(of: 2, in: a.directory)))
            let unowned = a.log([Self.registration(Self.token(9, in: 2))])
            #expect(unowned.failure?.description.contains("no gateway serves registry partition 2") == true, "\(String(describing: unowned))")
            try await b.takeUp([2], fence: 6)
            _ = try a.log([Self.registration(Self.token(9, in: 2))]).get()
            #expect(try b.tokens(of: 2).map(\.token) == ((1...5).map { Self.token($0, in: 2) } + [Self.token(9, in: 2)]))
        }
    }

    /// Take-ups started together read their partitions a few at a time, and every one of them
    /// gets its turn.
    @Test(arguments: NATSBackend.allCases)
    func takeUpsStartedTogetherReadTheirPartitionsTwoAtATime(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let writer = try Gateway(cluster)
            try await writer.takeUp(0..<8, fence: 5)
            _ = try writer.log((0..<8).flatMap { partition in (1...5).map { Self.registration(Self.token($0, in: partition), at: Int64($0)) } }).get()
            (0..<8).forEach(writer.registry.letGo)

            let reader = try Gateway(cluster, takeUpsAtOnce: 2)
            let registry = reader.registry
            try await withThrowingTaskGroup(of: Void.self) { group in
                for partition in 0..<8 {
                    group.addTask { _ = try await DedicatedThread.run(name: "take-up") { try registry.takeUp(partition, under: Fence(Revision(9))) } }
                }
                try await group.waitForAll()
            }
            #expect(registry.servedPartitions == Array(0..<8))
            #expect((1...2).contains(registry.takeUpSlots.peak), "at most two at once: \(registry.takeUpSlots.peak)")
            #expect(try (0..<8).allSatisfy { try reader.tokens(of: $0).count == 5 })
        }
    }

    /// A partition let go keeps its file for a while: taken up again within it, the file is read
    /// on from where it is (what was logged meanwhile by another owner included). The file is
    /// kept for a minute here: kept for one second, another gateway's take-up and write in
    /// between outlasted it on a loaded machine, and the file was gone when taken up again.
    @Test(arguments: NATSBackend.allCases)
    func aPartitionLetGoKeepsItsFileForAWhileAndReadsOnFromItWhenTakenUpAgain(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let a = try Gateway(cluster, keptFileLifetime: .seconds(60))
            let b = try Gateway(cluster)
            try await a.takeUp(0..<8, fence: 5)
            _ = try a.log((1...5).map { Self.registration(Self.token($0, in: 3)) }).get()
            a.registry.letGo(3)
            let path = RegistryPartition.path(of: 3, in: a.directory)
            #expect(FileManager.default.fileExists(atPath: path), "kept")
            try await b.takeUp([3], fence: 6)
            _ = try b.log([Self.registration(Self.token(6, in: 3))]).get()
            b.registry.letGo(3)
            let registry = a.registry
            let heldBefore = try await DedicatedThread.run(name: "take-up") { try registry.takeUp(3, under: Fence(Revision(7))) }
            #expect(heldBefore > 0, "the kept file read on from where it was")
            #expect(try a.tokens(of: 3).map(\.token) == (1...6).map { Self.token($0, in: 3) }, "with what b logged")
        }
    }

    /// A kept file goes once its time has passed without a take-up.
    @Test(arguments: NATSBackend.allCases)
    func aKeptFileGoesOnceItsTimeHasPassed(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let a = try Gateway(cluster, keptFileLifetime: .seconds(1))
            try await a.takeUp([3], fence: 5)
            _ = try a.log((1...5).map { Self.registration(Self.token($0, in: 3)) }).get()
            a.registry.letGo(3)
            let path = RegistryPartition.path(of: 3, in: a.directory)
            #expect(FileManager.default.fileExists(atPath: path), "kept")
            try await eventually("the kept file dropped after its second", timeout: .seconds(10)) { !FileManager.default.fileExists(atPath: path) }
        }
    }

    /// A user's new token replaces the user's earlier one in another partition, owned by
    /// another gateway: the user's partition decides it, and its owner logs it there.
    @Test(arguments: NATSBackend.allCases)
    func aUsersNewTokenReplacesTheEarlierOneWhereverItsPartitionIsOwned(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, b) = try await Self.twoGateways(cluster)
            let (earlier, later) = (Self.token(1, in: 1), Self.token(2, in: 6))
            _ = try a.log([Self.registration(earlier, user: "ann", at: 1)]).get()
            _ = try b.log([Self.registration(later, user: "ann", at: 2)]).get()
            try await eventually("the earlier token deactivated in its partition, at gateway a", timeout: .seconds(10)) {
                try a.tokens(of: 1).first?.active == false
            }
            #expect(try a.tokens(of: 1).first?.deactivatedAt == Self.t0 + .seconds(2))
            #expect(try b.tokens(of: 6).first?.active == true)
            let userPartition = Self.partitioning.partition(ofUser: "ann")
            let directory = try SQLiteConnection(path: RegistryPartition.path(of: userPartition, in: (userPartition < 4 ? a : b).directory))
            try await eventually("the replacement forgotten once logged", timeout: .seconds(10)) {
                try directory.query("SELECT count(*) FROM token_supersessions") { $0.int64(at: 0) } == [0]
            }
            directory.close()
        }
    }

    /// A kickoff slice cut on the registry's bounds reads its audience from its owner's file, a
    /// page at a time up to the partition's end; a partition not (or no longer) owned is refused.
    @Test(arguments: NATSBackend.allCases)
    func slicesOnTheRegistrysBoundsReadTheirOwnersFiles(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, other) = try await Self.twoGateways(cluster)
            _ = try a.log((0..<8).flatMap { partition in
                (1...7).map { Self.registration(Self.token($0, in: partition), follows: $0 == 4 ? ["team:CHE"] : ["team:ARS"]) }
            }).get()
            #expect(other.registry.path(of: 5) != nil && a.registry.path(of: 5) == nil)
            let registry = a.registry
            let reader = OwnedPartitionsReader(partitioning: Self.partitioning) { registry.path(of: $0) }
            defer { reader.close() }
            for slice in AudienceSlice.all(count: 8) where slice.index < 4 {
                var walked: [String] = [], cursor = slice.startCursor
                while true {
                    let page = try reader.pushToStartTokens(following: "team:ARS", app: "default", after: cursor, limit: 3, environment: nil)
                    walked += page.map(\.token)
                    cursor = page.last?.token ?? cursor
                    if page.count < 3 { break }
                }
                #expect(walked == [1, 2, 3, 5, 6, 7].map { Self.token($0, in: slice.index) }, "\(slice)")
            }
            #expect(throws: StoreError.self, "partition 5 is b's") {
                try reader.pushToStartTokens(following: "team:ARS", app: "default", after: AudienceSlice(index: 5, count: 8)!.startCursor,
                                             limit: 3, environment: nil)
            }
            #expect(try reader.activeTokens(among: [Self.token(2, in: 1), Self.token(9, in: 0)], app: "default", environment: nil) == [Self.token(2, in: 1)])
            a.registry.letGo(1)
            #expect(throws: StoreError.self, "let go") { try reader.token(Self.token(2, in: 1)) }
        }
    }

    /// Reads gathered from the owners: a lookup across partitions, and a user's tokens listed by
    /// the user's partition and read from theirs, the same through either gateway.
    @Test(arguments: NATSBackend.allCases)
    func readsAreGatheredFromTheOwners(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let (a, b) = try await Self.twoGateways(cluster)
            let tokens = (0..<8).map { Self.token(7, in: $0) }
            _ = try a.log(tokens.enumerated().map { Self.registration($1, user: "ann", at: Int64($0)) }).get()
            // One of ann's tokens moves on to bob: ann's directory still names it, its partition does not.
            _ = try b.log([Self.registration(tokens[3], user: "bob", at: 20)]).get()
            try await eventually("ann's replacements logged", timeout: .seconds(10)) {
                let listed = try waitForCompletion { a.registry.tokens(userID: "ann", app: "default", limit: 100, completion: $0) }.get()
                return listed.filter(\.active).count == 1
            }
            for gateway in [a, b] {
                let listed = try waitForCompletion { gateway.registry.tokens(userID: "ann", app: "default", limit: 100, completion: $0) }.get()
                #expect(listed.map(\.token) == [7, 6, 5, 4, 2, 1, 0].map { tokens[$0] }, "newest first, without the one bob holds now")
                #expect(listed.map(\.active) == [true] + Array(repeating: false, count: 6), "the newest replaced the rest")
                let limited = try waitForCompletion { gateway.registry.tokens(userID: "ann", app: "default", limit: 2, completion: $0) }.get()
                #expect(limited.map(\.token) == [tokens[7], tokens[6]])
                let found = try waitForCompletion { gateway.registry.lookUp([tokens[3], tokens[5].uppercased(), Self.token(99, in: 6)], completion: $0) }.get()
                #expect(found.map(\.token) == [tokens[3], tokens[5]] && found.first?.userID == "bob", "unknown tokens left out")
            }
        }
    }
}

@Suite struct RegistryPartitionExchangeTests {
    @Test func requestsAndAnswersReadBackAndDamageIsNamedNotTrusted() throws {
        let t0 = UnixTime(seconds: 1_767_225_600)
        let record = TokenRecord(token: "ab01", kind: .update, channelID: "match-1", userID: "ann", follows: ["team:ARS"], environment: .sandbox,
                                 registeredAt: t0, active: false, deactivatedAt: t0 + .seconds(4), app: "tv")
        // A registration logs no state (it registers the token active).
        let entry = try #require(RegistryEntry([.registerToken(TokenRecord(token: "ab01", kind: .pushToStart, userID: "ann", registeredAt: t0, app: "tv"))]))
        for request in [RegistryPartitionRequest.write(entry), .lookUp(["ab01", "ab02"]), .directory(userID: "ann", app: "tv", limit: 100)] {
            #expect(try RegistryPartitionRequest(decoding: request.encoded) == request)
        }
        for answer in [RegistryPartitionAnswer.written(TokenWriteSummary(tokensDeactivated: 3)), .records([record]), .tokens(["ab01"]),
                       .refused("no"), .failed("down")] {
            #expect(try RegistryPartitionAnswer(decoding: answer.encoded) == answer)
        }
        var huge = BinaryRecordWriter()
        huge.byte(1)
        huge.byte(3)
        huge.string("ann")
        huge.string("tv")
        huge.unsigned(.max)
        #expect(throws: BinaryRecordReader.Damaged.self, "a limit past what anyone asks for") { try RegistryPartitionRequest(decoding: huge.bytes) }
        #expect(throws: BinaryRecordReader.Damaged.self) { try RegistryPartitionAnswer(decoding: [9]) }
    }
}
