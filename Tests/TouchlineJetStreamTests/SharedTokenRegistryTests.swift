import Dispatch
import Foundation
import NATS
import NATSServers
import Synchronization
import Testing
import TestSlots
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// What the shared registry adds to the personal store contract (which it passes in
/// `StoreContractTests`): every gateway's copy follows one log, catches up when opened, refuses
/// a log it does not belong to, and never skips an entry it could not apply.
@Suite("Shared token registry, on nats-server and in memory")
struct SharedTokenRegistryTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)

    static func token(_ n: Int) -> String {
        let digits = String(n, radix: 16)
        return String(repeating: "0", count: 64 - digits.count) + digits
    }

    static func pushToStart(_ n: Int, at time: UnixTime = t0) -> TokenOperation {
        .registerToken(TokenRecord(token: token(n), kind: .pushToStart, follows: ["team:ARS"], registeredAt: time))
    }

    @Test(arguments: NATSBackend.allCases)
    func aRegistrationThroughOneGatewayReachesEveryCopy(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let first = try cluster.gateway("a")
            let second = try cluster.gateway("b")
            try first.write((1...40).map { Self.pushToStart($0) })
            try second.write([Self.pushToStart(41)])
            // Read-your-writes at the gateway that wrote; the other's copy follows within moments.
            #expect(try first.scan().count >= 40)
            try await second.eventually { try $0.scan() == (1...41).map(Self.token) }
            try await first.eventually { try $0.scan() == (1...41).map(Self.token) }
            // Only the copy's application decides what a deactivation changed, whichever gateway asks.
            let deactivated = try second.write([.deactivateToken(Self.token(7), unlessRegisteredAfter: Self.t0, at: Self.t0 + .seconds(5))])
            #expect(deactivated.tokensDeactivated == 1)
            try await first.eventually { try $0.scan().count == 40 }
            let again = try first.write([.deactivateToken(Self.token(7), unlessRegisteredAfter: Self.t0, at: Self.t0 + .seconds(6))])
            #expect(again.tokensDeactivated == 0, "already inactive in the copy the log built")
            [first, second].forEach { $0.close() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aReopenedFileCatchesUpBeforeItServes(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            var first = try cluster.gateway("a")
            try first.write((1...100).map { Self.pushToStart($0) })
            first.close()
            let second = try cluster.gateway("b")
            for batch in stride(from: 101, through: 250, by: 50) { try second.write((batch..<batch + 50).map { Self.pushToStart($0) }) }
            // Opening returns only once the file holds the whole log: no waiting here.
            first = try cluster.gateway("a")
            #expect(try first.scan() == (1...250).map(Self.token))
            [first, second].forEach { $0.close() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aNewCopyReadsALongLogAWindowAtATime(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            // 300 entries logged by another gateway, as a plain publisher would.
            let layout = RegistryLogLayout()
            try cluster.jetStream.ensureStream(.init(name: layout.streamName, subjects: [layout.subject], replicas: 1))
            for first in stride(from: 0, to: 6_000, by: 20) {
                let entry = RegistryEntry((first..<first + 20).map { Self.pushToStart($0 + 1) })!
                _ = try await withCheckedThrowingContinuation { (done: CheckedContinuation<JetStream.Acknowledgement, any Error>) in
                    cluster.jetStream.publish(entry.binaryEncoded, to: RegistryLogLayout().subject, loop: cluster.loop) { done.resume(with: $0) }
                }
            }
            // The whole log would land in the file's queue at once (one transaction of all of it, a
            // gigabyte of memory at 10 million tokens); the window hands it over a few entries at a time.
            let path = "\(cluster.directory)/late.sqlite"
            let file = try StoreWriter(path: path)
            let deepest = Mutex(0)
            let opened = Mutex<Result<SharedTokenRegistry, any Error>?>(nil)
            Thread {
                let result = Result { try SharedTokenRegistry.open(jetStream: cluster.jetStream, layout: RegistryLogLayout(), replicas: 1, local: file,
                                                                   loop: cluster.loop) }
                opened.withLock { $0 = result }
            }.start()
            while opened.withLock({ $0 == nil }) {
                let depth = file.queueDepth
                deepest.withLock { $0 = max($0, depth) }
                try await Task.sleep(for: .milliseconds(1))
            }
            let registry = try opened.withLock { $0! }.get()
            let gateway = RegistryGateway(registry: registry, path: path, faultFile: path + ".none")
            #expect(try gateway.scan() == (1...6_000).map(Self.token))
            #expect(deepest.withLock { $0 } <= SharedTokenRegistry.applyWindow, "at most a window of entries queued at the file")
            gateway.close()
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func anEntryMissingFromTheLogStopsANewCopyBeforeIt(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let writer = try cluster.gateway("a")
            for n in 1...3 { try writer.write([Self.pushToStart(n)]) }
            writer.close()
            // An operator removes the second entry: the log's sequences no longer follow one another.
            let layout = RegistryLogLayout()
            let deleted = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
                cluster.loop.execute {
                    guard let requests = try? NATSRequests(connection: cluster.jetStream.messaging, loop: cluster.loop) else { return done.resume(returning: "") }
                    requests.request(Array(#"{"seq":2}"#.utf8), to: "$JS.API.STREAM.MSG.DELETE.\(layout.streamName)", timeout: .seconds(5)) { result in
                        withExtendedLifetime(requests) { done.resume(returning: (try? result.get()).map { String(decoding: $0.payload, as: UTF8.self) } ?? "") }
                    }
                }
            }
            #expect(deleted.contains(#""success":true"#), "\(deleted)")
            // A new copy reads 1, finds 3 where 2 should be, reads again, finds 3 again: it stops
            // before the gap, naming it, instead of going on without entry 2.
            #expect { _ = try cluster.gateway("b") } throws: { error in
                "\(error)".contains("token registry log entry 2 is missing (the next is 3)")
            }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aFileOfAnotherLogIsRefusedNamingBothPositions(backend: NATSBackend) async throws {
        // The first cluster is gone before the other starts: its gateway's file stays.
        let directory = try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let gateway = try cluster.gateway("a")
            for n in 1...3 { try gateway.write([Self.pushToStart(n)]) }
            gateway.close()
            return cluster.directory
        }
        try await backend.withCluster { other in
            let elsewhere = try RegistryCluster(other, directory: directory)
            #expect { _ = try elsewhere.gateway("a") } throws: { error in
                "\(error)".contains("holds the token registry up to log sequence 3") && "\(error)".contains("ends at 0")
            }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aCopyThatCannotApplyAnEntryStopsBeforeItAndResumesWhenItCan(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let first = try cluster.gateway("a")
            let second = try cluster.gateway("b")
            try first.write([Self.pushToStart(1)])
            try await second.eventually { try $0.scan().count == 1 }
            // `second`'s disk refuses writes: it cannot apply what `first` logs, and says so.
            #expect(FileManager.default.createFile(atPath: second.faultFile, contents: Data()))
            for n in 2...5 { try first.write([Self.pushToStart(n)]) }
            try await second.eventually { $0.registry.health.isFailing }
            #expect(try second.scan().count == 1)
            // Its tries every second fail too while the disk refuses (a full run's load once kept
            // the disk full past the first try: that second failure stopped the retries for good).
            try await Task.sleep(for: SharedTokenRegistry.restartDelay * 2.5)
            // Once it can, it applies every entry it missed, in order, and is healthy again.
            try FileManager.default.removeItem(atPath: second.faultFile)
            try await second.eventually { try $0.scan() == (1...5).map(Self.token) && !$0.registry.health.isFailing }
            [first, second].forEach { $0.close() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func anEntryNoBuildCanReadStopsTheCopyInsteadOfBeingSkipped(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let gateway = try cluster.gateway("a")
            try gateway.write([Self.pushToStart(1)])
            let stored = await withCheckedContinuation { done in
                cluster.jetStream.publish([0xFF, 0x01], to: RegistryLogLayout().subject, loop: cluster.loop) { done.resume(returning: $0) }
            }
            let sequence = try stored.get().sequence
            try await gateway.eventually { $0.registry.health.failure?.description.contains("entry \(sequence) cannot be read") == true }
            let after = Result { try gateway.write([Self.pushToStart(2)]) }
            #expect((try? after.get()) == nil, "logged after the damaged entry, so never applied here: the list fails instead of answering")
            #expect(try gateway.scan() == [Self.token(1)])
            gateway.close()
        }
    }

    /// A fence for compactions that holds, or not, as the test says.
    struct TestFence: SideEffectFence { let holds: Bool }

    /// Compaction (docs/cluster.md, "Compacting the token registry"): a snapshot in parts, the
    /// log trimmed below the one before, and a new copy restored from it holding exactly what
    /// the copy that wrote it holds.
    @Test(arguments: NATSBackend.allCases)
    func aCompactedLogIsRestoredFromItsSnapshotByANewCopy(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let first = try cluster.gateway("a")
            for n in 1...30 { try first.write([Self.pushToStart(n)]) }
            try first.write([.deactivateToken(Self.token(4), unlessRegisteredAfter: Self.t0, at: Self.t0 + .seconds(1)), .deleteToken(Self.token(5))])
            let settings = RegistryCompactionSettings(entriesBetweenSnapshots: 10, partBytes: 300)
            let holds = TestFence(holds: true)
            guard case .compacted(let firstSnapshot, let parts, nil) = try first.registry.compact(settings, fence: holds) else {
                Issue.record("the first compaction did not store a snapshot")
                return
            }
            #expect(firstSnapshot == 31 && parts > 1, "a snapshot of the copy at the log's end, cut in parts of 300 bytes")
            #expect(try first.registry.compact(settings, fence: holds) == .notDue(newest: 31))
            for n in 31...45 { try first.write([Self.pushToStart(n)]) }
            guard case .compacted(46, _, 32) = try first.registry.compact(settings, fence: holds) else {
                Issue.record("the second compaction did not store a snapshot at 46 and trim below 32")
                return
            }
            let log = try #require(try cluster.jetStream.streamState(RegistryLogLayout().streamName))
            #expect(log.firstSequence == 32 && log.lastSequence == 46, "the log keeps what follows the snapshot before the newest")
            let statistics = first.registry.compactionStatistics
            #expect(statistics.written == 2 && statistics.restored == 0 && statistics.trimmedEntries == 31)

            // A new gateway's file is behind the log's start: restored from the newest snapshot.
            let second = try cluster.gateway("b")
            let expected = (1...45).filter { $0 != 4 && $0 != 5 }.map(Self.token)
            #expect(try second.scan() == expected)
            #expect(try first.scan() == expected)
            #expect(second.registry.compactionStatistics.restored == 1)
            #expect(try Self.rows(second.path) == Self.rows(first.path), "the same rows, inactive and all")
            // And both follow the log on from there.
            try second.write([Self.pushToStart(46)])
            try await first.eventually { try $0.scan().last == Self.token(46) }
            [first, second].forEach { $0.close() }
        }
    }

    /// A copy that could not apply while the log was compacted twice (its next entry is gone)
    /// is restored from the newest snapshot while it runs, then follows the log again.
    @Test(arguments: NATSBackend.allCases)
    func aCopyLeftBehindATrimIsRestoredWhileItRuns(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let first = try cluster.gateway("a")
            let second = try cluster.gateway("b")
            try first.write([Self.pushToStart(1)])
            try await second.eventually { try $0.scan().count == 1 }
            #expect(FileManager.default.createFile(atPath: second.faultFile, contents: Data()))
            let settings = RegistryCompactionSettings(entriesBetweenSnapshots: 5, partBytes: 4_096)
            for round in 0..<2 {
                for n in 0..<6 { try first.write([Self.pushToStart(2 + round * 6 + n)]) }
                guard case .compacted = try first.registry.compact(settings, fence: TestFence(holds: true)) else {
                    Issue.record("compaction \(round + 1) did not store a snapshot")
                    return
                }
            }
            #expect(try #require(try cluster.jetStream.streamState(RegistryLogLayout().streamName)).firstSequence > 2)
            try FileManager.default.removeItem(atPath: second.faultFile)
            try first.write([Self.pushToStart(14)])
            try await second.eventually { try $0.scan() == (1...14).map(Self.token) && !$0.registry.health.isFailing }
            #expect(second.registry.compactionStatistics.restored == 1)
            [first, second].forEach { $0.close() }
        }
    }

    /// A compactor whose hold has moved writes nothing; one with too few entries neither.
    @Test(arguments: NATSBackend.allCases)
    func aCompactionWritesNothingWithoutItsHoldOrBeforeItIsDue(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let gateway = try cluster.gateway("a")
            for n in 1...12 { try gateway.write([Self.pushToStart(n)]) }
            #expect(try gateway.registry.compact(RegistryCompactionSettings(entriesBetweenSnapshots: 10), fence: TestFence(holds: false)) == .fenced)
            #expect(try gateway.registry.compact(RegistryCompactionSettings(entriesBetweenSnapshots: 13), fence: TestFence(holds: true)) == .notDue(newest: 0))
            let snapshots = try #require(try cluster.jetStream.streamState(RegistryLogLayout().snapshotStreamName))
            #expect(snapshots.messages == 0)
            #expect(try #require(try cluster.jetStream.streamState(RegistryLogLayout().streamName)).firstSequence == 1)
            gateway.close()
        }
    }

    /// A snapshot that cannot be read whole changes nothing in the file it was to replace.
    @Test func aDamagedSnapshotRestoresNothing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-snapshot-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = try StoreWriter(path: directory + "/a.sqlite")
        defer { source.close() }
        _ = try waitForCompletion { source.applyRegistryEntry(RegistryEntry((1...3).map { Self.pushToStart($0) })!, sequence: 1, previous: 0, completion: $0) }.get()
        let snapshot = try waitForCompletion { source.readRegistrySnapshot(completion: $0) }.get()
        let target = try StoreWriter(path: directory + "/b.sqlite")
        defer { target.close() }
        _ = try waitForCompletion { target.applyRegistryEntry(RegistryEntry([Self.pushToStart(9)])!, sequence: 1, previous: 0, completion: $0) }.get()
        let cut = RegistrySnapshot(layout: .rows, sequence: 2, bytes: Array(snapshot.bytes.dropLast(5)))
        #expect(throws: StoreError.self) { try waitForCompletion { target.restoreRegistrySnapshot(cut, completion: $0) }.get() }
        #expect(try Self.rows(directory + "/b.sqlite").map(\.first) == [Self.token(9)])
        #expect(try waitForCompletion { target.registryLogSequence(completion: $0) }.get() == 1)
        // The whole one replaces the file's registry.
        let whole = RegistrySnapshot(layout: .rows, sequence: 2, bytes: snapshot.bytes)
        #expect(try waitForCompletion { target.restoreRegistrySnapshot(whole, completion: $0) }.get())
        #expect(try Self.rows(directory + "/b.sqlite") == Self.rows(directory + "/a.sqlite"))
    }

    /// Every registry row of a file, as text: token, kind, active, deactivation, follows.
    static func rows(_ path: String) throws -> [[String]] {
        let connection = try SQLiteConnection(path: path)
        defer { connection.close() }
        return try connection.query("""
            SELECT token, kind, active, coalesce(deactivated_at, ''), coalesce((SELECT group_concat(follow) FROM token_follows f WHERE f.token = t.token), '')
            FROM tokens t ORDER BY token
            """) { row in (0..<5).map { row.text(at: Int32($0)) ?? "" } }
    }

    @Test(arguments: NATSBackend.allCases)
    func listsCompleteInOrderAndACheckpointNeverOvertakesAnEarlierOne(backend: NATSBackend) async throws {
        try await backend.withCluster { nats in
            let cluster = try RegistryCluster(nats)
            let gateway = try cluster.gateway("a")
            try gateway.write([Self.pushToStart(1), .createJob(PersonalJobRecord(id: "j", createdAt: Self.t0, audience: "{}", payload: [], status: .running))])
            let order = Mutex<[Int]>([])
            let done = DispatchSemaphore(value: 0)
            // A checkpoint with a 410's deactivation (logged first), then one of the file alone.
            let progress = { (cursor: Int, sent: Int) in
                TokenOperation.advanceJob(PersonalJobProgress(jobID: "j", cursor: Self.token(cursor), counts: PersonalJobCounts(sent: Int64(sent)), at: Self.t0))
            }
            gateway.registry.submit([.deactivateToken(Self.token(1), unlessRegisteredAfter: Self.t0, at: Self.t0), progress(1, 1)]) { _ in
                order.withLock { $0.append(1) }
                done.signal()
            }
            gateway.registry.submit([progress(2, 2)]) { _ in
                order.withLock { $0.append(2) }
                done.signal()
            }
            done.wait()
            done.wait()
            #expect(order.withLock { $0 } == [1, 2])
            let reader = try SQLiteTokenReader(path: gateway.path)
            defer { reader.close() }
            #expect(try reader.job(id: "j")?.cursor == Self.token(2), "the later checkpoint committed last")
            #expect(try reader.token(Self.token(1))?.active == false)
            gateway.close()
        }
    }
}

/// A client of a one-node cluster (either backend) and the gateways' personal files beside it,
/// in one temporary directory.
private final class RegistryCluster: Sendable {
    let loop: EventLoop
    let jetStream: any JetStreamClient
    let directory: String

    /// `directory`: the gateways' files of an earlier cluster (a new one by default).
    init(_ cluster: TestNATSCluster, directory: String? = nil) throws {
        loop = EventLoop.start(name: "registry-test")
        jetStream = try cluster.connect(name: "registry-test", loop: loop)
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("touchline-registry-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
    }

    deinit { loop.stop() }

    /// The registry of the gateway called `name`, on its own file (opened again if it exists).
    func gateway(_ name: String) throws -> RegistryGateway {
        let path = "\(directory)/\(name).sqlite"
        let faultFile = "\(directory)/\(name).disk-full"
        let file = try StoreWriter(path: path, faultFile: faultFile)
        do {
            let registry = try SharedTokenRegistry.open(jetStream: jetStream, layout: RegistryLogLayout(), replicas: 1, local: file, loop: loop,
                                                        applyLimit: .seconds(1))
            return RegistryGateway(registry: registry, path: path, faultFile: faultFile)
        } catch {
            file.close()
            throw error
        }
    }
}

private struct RegistryGateway: Sendable {
    let registry: SharedTokenRegistry
    let path: String
    let faultFile: String

    @discardableResult
    func write(_ operations: [TokenOperation]) throws -> TokenWriteSummary {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<TokenWriteSummary, StoreError>?>(nil)
        registry.submit(summarizing: operations) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// The whole follows scan of "team:ARS" in this gateway's copy.
    func scan() throws -> [String] {
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        var seen: [String] = []
        while case let page = try reader.pushToStartTokens(following: "team:ARS", after: seen.last, limit: 100, environment: nil), !page.isEmpty {
            seen += page.map(\.token)
        }
        return seen
    }

    /// Polls `condition` for up to 10 s.
    func eventually(_ condition: (RegistryGateway) throws -> Bool) async throws {
        try await TestSlots.eventually("the registry's condition", timeout: .seconds(10)) { try condition(self) }
    }

    func close() { registry.close() }
}
