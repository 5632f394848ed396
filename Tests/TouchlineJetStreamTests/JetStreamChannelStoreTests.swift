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

/// What the JetStream channel store adds to the channel store contract (which it passes in
/// `StoreContractTests`): the log is shared, fenced, and survives the loss of a NATS node.
@Suite("JetStream channel store, on nats-server and in memory")
struct JetStreamChannelStoreTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)
    static let layout = ChannelLogLayout(partitioning: ChannelPartitioning(count: 8)!)

    static func channel(_ id: String) -> ChannelRecord {
        ChannelRecord(id: id, storagePolicy: .mostRecent, status: .active, createdAt: t0)
    }

    static func event(_ id: String, _ seq: Int64) -> StoredEvent {
        StoredEvent(channelID: id, seq: seq, receivedAt: t0 + .seconds(seq), body: Array(#"{"seq":\#(seq)}"#.utf8))
    }

    @Test(arguments: NATSBackend.allCases)
    func aGatewayThatLostItsPartitionCannotWriteItsLogAnyMore(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let creator = try node.open()
            try creator.write(.createChannel(Self.channel("m1")))
            creator.close()
            let first = try node.open()
            let second = try node.open()
            try first.write(.appendEvents([Self.event("m1", 1)]))
            // `second` read the log before `first` wrote: for the cluster it is a deposed owner.
            let told = Mutex<[Int]>([])
            second.onStalePartition { partition in told.withLock { $0.append(partition) } }
            let stale = second.write([.appendEvents([Self.event("m1", 2)])])
            #expect(stale.failure?.isStorageFailure == true)
            #expect(stale.failure?.description.contains("was written since this gateway read it") == true, "\(String(describing: stale.failure))")
            // The log is stale for `second` until read again: it is told, and writes nothing meanwhile.
            let partition = Self.layout.partitioning.partition(of: "m1")
            #expect(told.withLock { $0 } == [partition])
            let meanwhile = second.write([.appendEvents([Self.event("m1", 2)])])
            #expect(meanwhile.failure?.description.contains("is being read again") == true, "\(String(describing: meanwhile.failure))")
            try first.write(.appendEvents([Self.event("m1", 3)]))
            let restored = try node.open()
            let reader = restored.openReader()
            #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1, 3])
            // Read again, `second` sees what `first` wrote and may write after it.
            try second.catchUp(partition: partition)
            #expect(try second.openReader().events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1, 3])
            try second.write(.appendEvents([Self.event("m1", 4)]))
            [first, second, restored].forEach { $0.close() }
        }
    }

    /// Two owners of one partition in turn, each writing under its own fence. The second's
    /// takeover record follows everything the first had stored, so the first (its lease still
    /// valid by its own clock, as a paused gateway believes) cannot store anything after it:
    /// its next write is refused, and nothing it wrote is missing from what the second reads.
    /// A write whose fence no longer holds is not sent at all.
    @Test(arguments: NATSBackend.allCases)
    func aTakeoverRecordFencesTheEarlierOwnerOutAndALapsedFenceSendsNothing(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let partition = Self.layout.partitioning.partition(of: "m1")
            let stream = Self.layout.streamName(of: .partition(partition))
            let far = ContinuousClock.now + .seconds(3_600)
            let firstFences = PartitionFences(partitions: 8)
            firstFences.update([partition: (Fence(Revision(5)), far)])
            let secondFences = PartitionFences(partitions: 8)
            secondFences.update([partition: (Fence(Revision(9)), far)])
            let node = try Node(cluster)
            let first = try node.open(fences: firstFences)
            let second = try node.open(fences: secondFences)

            let notTakenOver = first.write([.createChannel(Self.channel("m1"))])
            #expect(notTakenOver.failure?.description.contains("is not taken over by this gateway") == true, "\(String(describing: notTakenOver))")
            try await DedicatedThread.run(name: "takeover") { try first.takeOver(partition: partition, under: Fence(Revision(5))) }
            try first.write(.createChannel(Self.channel("m1")))
            for seq in Int64(1)...3 { try first.write(.appendEvents([Self.event("m1", seq)])) }

            try await DedicatedThread.run(name: "takeover") { try second.takeOver(partition: partition, under: Fence(Revision(9))) }
            #expect(try second.openReader().events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1, 2, 3])
            let messages = try #require(try node.jetStream.streamState(stream)?.messages)
            let deposed = first.write([.appendEvents([Self.event("m1", 4)])])
            #expect(deposed.failure?.description.contains("was written since this gateway read it") == true, "\(String(describing: deposed))")
            #expect(try node.jetStream.streamState(stream)?.messages == messages, "nothing of the earlier owner after the record")
            try second.write(.appendEvents([Self.event("m1", 4)]))

            // The second's lease lapses: its next write is dropped before it is sent.
            secondFences.update([:])
            let lapsed = second.write([.appendEvents([Self.event("m1", 5)])])
            #expect(lapsed.failure?.description.contains("no longer holds; the write is dropped") == true, "\(String(describing: lapsed))")
            #expect(try node.jetStream.streamState(stream)?.messages == messages + 1)
            let restored = try node.open()
            #expect(try restored.openReader().events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1, 2, 3, 4])
            [first, second, restored].forEach { $0.close() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aBatchForChannelsOfTwoPartitionsIsRefusedWhole(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let store = try node.open()
            let ids = (0..<50).map { "match-\($0)" }
            let a = ids[0]
            let b = try #require(ids.first { Self.layout.partitioning.partition(of: $0) != Self.layout.partitioning.partition(of: a) })
            try store.write(.createChannel(Self.channel(a)))
            try store.write(.createChannel(Self.channel(b)))
            let refused = store.write([.appendEvents([Self.event(a, 1)]), .appendEvents([Self.event(b, 1)])])
            #expect(refused.failure?.description.contains("cannot commit as one") == true)
            #expect(try store.openReader().events(channelID: a, afterSeq: 0, limit: 10).isEmpty)
            store.close()
        }
    }

    /// A gateway taking a partition up reads its log into the tables while its writes to
    /// partitions it already serves are in flight: each write's completion applies to the tables
    /// as they are then, so neither the partition read nor the writes are lost.
    @Test(arguments: NATSBackend.allCases)
    func aPartitionTakenUpDuringWritesToAnotherKeepsBoth(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let ids = (0..<50).map { "match-\($0)" }
            let served = ids[0]
            let takenUp = try #require(ids.first { Self.layout.partitioning.partition(of: $0) != Self.layout.partitioning.partition(of: served) })
            let previousOwner = try node.open()
            try previousOwner.write(.createChannel(Self.channel(takenUp)))
            for seq in Int64(1)...200 { try previousOwner.write(.appendEvents([Self.event(takenUp, seq)])) }
            previousOwner.close()

            let gateway = try JetStreamChannelStore.open(jetStream: node.jetStream, layout: Self.layout, replicas: 1,
                                                         partitions: [Self.layout.partitioning.partition(of: served)], loop: node.loop)
            try gateway.write(.createChannel(Self.channel(served)))
            let done = DispatchGroup()
            for seq in Int64(1)...100 {
                done.enter()
                gateway.submit(WriteBatch([.appendEvents([Self.event(served, seq)])])) { _ in done.leave() }
            }
            try await DedicatedThread.run(name: "catch-up") { try gateway.catchUp(partition: Self.layout.partitioning.partition(of: takenUp)) }
            await withCheckedContinuation { finished in done.notify(queue: .global()) { finished.resume() } }
            let reader = gateway.openReader()
            #expect(try reader.events(channelID: takenUp, afterSeq: 0, limit: 1_000).map(\.seq) == Array(1...200))
            #expect(try reader.events(channelID: served, afterSeq: 0, limit: 1_000).map(\.seq) == Array(1...100))
            gateway.close()
        }
    }

    /// The partition log's leader killed in the middle of 300 writes. A publish whose answer was
    /// lost is sent again with its message id, so an election shorter than the store's 10 s costs
    /// nothing; one that takes longer (a loaded machine) fails the batch without knowing whether
    /// it was stored, and the log is stale for this store until read again, as a cluster gateway
    /// does. Either way every acknowledged batch is in the log exactly once, and after reading
    /// it again the store takes the rest.
    @Test func killingTheLogsLeaderMidWriteLosesNoAcknowledgedBatchAndLogsNoneTwice() async throws {
        try await NATSBackend.servers.withCluster(size: 3) { cluster in
            let node = try Node(cluster)
            let servers = try #require(cluster.servers)
            let store = try node.open(replicas: 3)
            try store.write(.createChannel(Self.channel("m1")))
            let partition = Self.layout.partitioning.partition(of: "m1")
            let log = Self.layout.streamName(of: .partition(partition))
            let leader = try #require(servers.nodes.firstIndex { $0.name == (try? node.jetStream.streamState(log))??.leader })
            let acknowledged = Mutex<[Int64]>([])
            let done = DispatchGroup()
            for seq in Int64(1)...300 {
                done.enter()
                store.submit(WriteBatch([.appendEvents([Self.event("m1", seq)])])) { result in
                    if case .success = result { acknowledged.withLock { $0.append(seq) } }
                    done.leave()
                }
                if seq == 100 { await servers.kill(leader) }
            }
            await withCheckedContinuation { finished in done.notify(queue: .global()) { finished.resume() } }
            let acked = acknowledged.withLock { $0 }
            // Read again (as a gateway does with a stale log), the rest is written after what is there.
            try await DedicatedThread.run(name: "catch-up") { try store.catchUp(partition: partition) }
            let present = Set(try store.openReader().events(channelID: "m1", afterSeq: 0, limit: 1_000).map(\.seq))
            for seq in Int64(1)...300 where !present.contains(seq) {
                try store.write(.appendEvents([Self.event("m1", seq)]))
            }
            store.close()
            print("log leader killed mid-write: \(acked.count) of 300 acknowledged on the first try")
            // A new owner rebuilds every batch, each once, the acknowledged ones among them.
            let restored = try node.open(replicas: 3)
            let seqs = try restored.openReader().events(channelID: "m1", afterSeq: 0, limit: 1_000).map(\.seq)
            #expect(seqs == Array(1...300))
            #expect(Set(acked).isSubset(of: Set(seqs)))
            #expect(acked.count >= 100, "the batches before the kill")
            restored.close()
        }
    }

    /// A batch stored whose answer was lost: the repeat (same id, same expected sequence) is
    /// refused for its condition by current servers, and the store reads the log's message at
    /// the place it expected: its own id, so the batch succeeds, once, and the log is not stale.
    /// Another writer's message there is a refusal and a stale log.
    @Test func aBatchStoredWithoutAnAnswerSucceedsOnceAndAnotherWritersPlaceIsARefusal() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let node = try Node(cluster)
            let store = try node.open()
            try store.write(.createChannel(Self.channel("m1")))
            let told = Mutex<[Int]>([])
            store.onStalePartition { partition in told.withLock { $0.append(partition) } }
            switches.failPublishes(.timedOut(stored: true), times: 1)
            try store.write(.appendEvents([Self.event("m1", 1)]))
            let partition = Self.layout.partitioning.partition(of: "m1")
            let stream = Self.layout.streamName(of: .partition(partition))
            #expect(try node.jetStream.streamState(stream)?.messages == 2, "the create and the event, once each")
            #expect(told.withLock { $0 }.isEmpty)
            try store.write(.appendEvents([Self.event("m1", 2)]))

            // Lost again, and another writer's message takes the place before the repeat: its
            // publish is queued on the store's loop right behind the first attempt.
            switches.failPublishes(.timedOut(stored: false), times: 1)
            let outcome = Mutex<Result<Void, StoreError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            store.submit(WriteBatch([.appendEvents([Self.event("m1", 3)])])) { result in
                outcome.withLock { $0 = result }
                finished.signal()
            }
            let intruder = await node.publishOnTheLoop([1, 2, 3], to: Self.layout.subject(of: .partition(partition)))
            await withCheckedContinuation { done in DispatchQueue.global().async { finished.wait(); done.resume() } }
            let refused = try #require(outcome.withLock { $0 })
            #expect(intruder != nil)
            #expect(refused.failure?.description.contains("was written since this gateway read it") == true, "\(String(describing: refused.failure))")
            #expect(told.withLock { $0 } == [partition])
            #expect(try store.openReader().events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1, 2])
            store.close()
        }
    }

    /// A write in its retry loop (the cluster does not answer) when its owner's lease lapses, as
    /// it does for a gateway paused mid-write: once the cluster answers again, the retry is not
    /// sent. The write fails naming the lapsed lease, and the log holds nothing of it, so a new
    /// owner's takeover record cannot be followed by it. The fences' clock follows the write's
    /// attempts (the first and two repeats go unanswered, and the lease has lapsed once the last
    /// of them has), not the test's: a test task that wakes late must not let the write run
    /// into its retry limit instead.
    @Test func aWriteInItsRetryLoopIsNotSentAgainOnceItsLeaseLapsed() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let partition = Self.layout.partitioning.partition(of: "m1")
            let stream = Self.layout.streamName(of: .partition(partition))
            let unanswered = 3
            let start = ContinuousClock.now
            let fences = PartitionFences(partitions: 8) { switches.failedPublishes < unanswered ? start : start + .seconds(7_200) }
            fences.update([partition: (Fence(Revision(5)), start + .seconds(3_600))])
            let node = try Node(cluster)
            let store = try node.open(fences: fences)
            try await DedicatedThread.run(name: "takeover") { try store.takeOver(partition: partition, under: Fence(Revision(5))) }
            try store.write(.createChannel(Self.channel("m1")))
            let logged = try #require(try node.jetStream.streamState(stream)?.messages)

            switches.failPublishes(.timedOut(stored: false), times: unanswered)
            let outcome = Mutex<Result<Void, StoreError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            store.submit(WriteBatch([.appendEvents([Self.event("m1", 1)])])) { result in
                outcome.withLock { $0 = result }
                finished.signal()
            }
            await withCheckedContinuation { done in DispatchQueue.global().async { finished.wait(); done.resume() } }
            let failed = try #require(outcome.withLock { $0 })
            #expect(switches.failedPublishes == unanswered)
            #expect(failed.failure?.description.contains("no longer holds; the write is dropped") == true, "\(String(describing: failed))")
            #expect(try node.jetStream.streamState(stream)?.messages == logged, "no retry was stored after the lease lapsed")
            store.close()
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aDamagedLogEntryStopsTheRestoreAndNamesWhere(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let store = try node.open()
            try store.write(.createChannel(Self.channel("m1")))
            store.close()
            let partition = Self.layout.partitioning.partition(of: "m1")
            let damaged = await node.publish([1, 1, 99], to: Self.layout.subject(of: .partition(partition)))
            #expect(damaged != nil)
            let failure = #expect(throws: StoreError.self) { try node.open() }
            #expect(failure?.description.contains("partition \(partition), log sequence \(damaged ?? 0)") == true, "\(String(describing: failure))")
            #expect(failure?.description.contains("operation tag 99 is not known") == true)
        }
    }

    /// Partitions write side by side, one batch in flight each: writes to channels of every
    /// partition, submitted interleaved, complete in each channel's order and all reach the log;
    /// an adopted channel's create (which checks an APNs id across partitions) goes alone and
    /// still refuses an id another partition's channel holds.
    @Test(arguments: NATSBackend.allCases)
    func partitionsWriteSideBySideAndEachKeepsItsOrder(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let store = try node.open()
            var channels: [Int: String] = [:]
            for id in (0..<200).map({ "match-\($0)" }) where channels[Self.layout.partitioning.partition(of: id)] == nil {
                channels[Self.layout.partitioning.partition(of: id)] = id
            }
            let ids = channels.values.sorted()
            try #require(ids.count == Self.layout.partitioning.count)
            for id in ids { try store.write(.createChannel(Self.channel(id))) }
            let completed = Mutex<[String: [Int64]]>([:])
            let done = DispatchGroup()
            for seq in Int64(1)...50 {
                for id in ids {
                    done.enter()
                    store.submit(WriteBatch([.appendEvents([Self.event(id, seq)])])) { result in
                        if case .success = result { completed.withLock { $0[id, default: []].append(seq) } }
                        done.leave()
                    }
                }
            }
            await withCheckedContinuation { finished in done.notify(queue: .global()) { finished.resume() } }
            for id in ids { #expect(completed.withLock { $0[id] } == Array(1...50), "\(id)") }
            try store.write(.channelCreated(channelID: ids[0], apnsChannelID: "apns-1", at: Self.t0))
            var adopted = Self.channel("adopted")
            adopted.apnsChannelID = "apns-1"
            let clash = Result { try store.write(.createChannel(adopted)) }
            #expect(clash.failure.map { "\($0)" }?.contains("apns_channel_id") == true, "\(clash)")
            let restored = try node.open()
            for id in ids { #expect(try restored.openReader().events(channelID: id, afterSeq: 0, limit: 100).map(\.seq) == Array(1...50)) }
            [store, restored].forEach { $0.close() }
        }
    }

    // MARK: Snapshots

    /// The bytes of one partition's channels as `store` has them: equal bytes, equal state.
    static func partitionState(_ store: JetStreamChannelStore, _ partition: Int) throws -> [UInt8] {
        try store.openReader().readTables { tables in tables.subset { id in layout.partitioning.partition(of: id) == partition }.binaryEncoded }
    }

    /// Channels of one partition with events, states, truncations and a deletion logged through
    /// several snapshots: the log is trimmed below the last snapshot, and a store opened
    /// afterwards (which reads the snapshot and what follows) has the same state byte for byte.
    @Test(arguments: NATSBackend.allCases)
    func aSnapshottedPartitionIsTrimmedAndRestoresTheSameState(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let ids = (0..<200).map { "match-\($0)" }
            let partition = Self.layout.partitioning.partition(of: ids[0])
            let same = ids.filter { Self.layout.partitioning.partition(of: $0) == partition }.prefix(3).map { $0 }
            try #require(same.count == 3)
            let store = try node.open(snapshots: .init(minimumLogBytes: 2_000))
            for id in same { try store.write(.createChannel(Self.channel(id))) }
            for seq in Int64(1)...120 {
                for id in same { try store.write(.appendEvents([Self.event(id, seq)])) }
                if seq % 40 == 0 { try store.write(.truncateEvents(channelID: same[0], throughSeq: seq - 10)) }
            }
            try store.write(.deleteChannel(channelID: same[2]))
            try store.write(.markStatus(channelID: same[1], status: .ending, end: nil, at: Self.t0 + .seconds(500)))
            try await eventually("a trim (\(store.snapshotStatistics))", timeout: .seconds(10)) { store.snapshotStatistics.trimmedMessages > 0 }
            #expect(store.snapshotStatistics.written >= 2, "\(store.snapshotStatistics)")
            let log = try #require(try node.jetStream.streamState(Self.layout.streamName(of: .partition(partition))))
            #expect(log.firstSequence > 1)
            #expect(log.messages < log.lastSequence / 4, "the log keeps the last snapshot and what follows it: \(log)")
            let restored = try node.open()
            #expect(try Self.partitionState(restored, partition) == Self.partitionState(store, partition))
            #expect(restored.snapshotStatistics.restored == 1)
            #expect(try restored.openReader().events(channelID: same[1], afterSeq: 0, limit: 1_000).map(\.seq) == Array(1...120))
            #expect(try restored.openReader().channel(id: same[2]) == nil)
            // The restored store writes after the snapshot like the one that wrote it.
            try restored.write(.appendEvents([Self.event(same[1], 121)]))
            [store, restored].forEach { $0.close() }
        }
    }

    /// A store that read a partition, fell behind while another wrote and trimmed it, catches up
    /// from the snapshot: the batches it missed are gone, the snapshot holds them.
    @Test(arguments: NATSBackend.allCases)
    func aStoreBehindATrimCatchesUpFromTheSnapshot(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let first = try node.open()
            try first.write(.createChannel(Self.channel("m1")))
            try first.write(.appendEvents([Self.event("m1", 1)]))
            let partition = Self.layout.partitioning.partition(of: "m1")
            let second = try node.open(snapshots: .init(minimumLogBytes: 500))
            for seq in Int64(2)...60 { try second.write(.appendEvents([Self.event("m1", seq)])) }
            try await eventually("a trim", timeout: .seconds(10)) { second.snapshotStatistics.trimmedMessages > 0 }
            try await DedicatedThread.run(name: "catch-up") { try first.catchUp(partition: partition) }
            #expect(try Self.partitionState(first, partition) == Self.partitionState(second, partition))
            #expect(first.snapshotStatistics.restored >= 1)
            [first, second].forEach { $0.close() }
        }
    }

    /// A deposed owner's snapshot is refused like its batches: it would put an old state after
    /// the new owner's writes.
    @Test(arguments: NATSBackend.allCases)
    func aDeposedOwnersSnapshotIsFenced(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let deposed = try node.open()
            try deposed.write(.createChannel(Self.channel("m1")))
            try deposed.write(.appendEvents([Self.event("m1", 1)]))
            let partition = Self.layout.partitioning.partition(of: "m1")
            let owner = try node.open()
            try owner.write(.appendEvents([Self.event("m1", 2)]))
            deposed.requestSnapshot(of: partition)
            try await eventually("a failed snapshot (\(deposed.snapshotStatistics))", timeout: .seconds(10)) { deposed.snapshotStatistics.failed == 1 }
            #expect(deposed.snapshotStatistics.written == 0)
            let restored = try node.open()
            #expect(try restored.openReader().events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1, 2])
            #expect(restored.snapshotStatistics.restored == 0)
            [deposed, owner, restored].forEach { $0.close() }
        }
    }

    /// A snapshot larger than the largest message allowed is written in parts: the log is
    /// trimmed below the first, and a store opened afterwards restores the same state from them.
    @Test(arguments: NATSBackend.allCases)
    func aSnapshotLargerThanOneMessageIsWrittenInPartsAndRestores(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let store = try node.open(snapshots: .init(minimumLogBytes: 100, maximumPartBytes: 200))
            try store.write(.createChannel(Self.channel("m1")))
            for seq in Int64(1)...40 { try store.write(.appendEvents([Self.event("m1", seq)])) }
            try await eventually("a snapshot written in parts, and a trim (\(store.snapshotStatistics))", timeout: .seconds(10)) {
                store.snapshotStatistics.writtenInParts >= 1 && store.snapshotStatistics.trimmedMessages > 0
            }
            let partition = Self.layout.partitioning.partition(of: "m1")
            #expect(try node.jetStream.streamState(Self.layout.streamName(of: .partition(partition)))?.firstSequence ?? 0 > 1)
            let restored = try node.open()
            #expect(restored.snapshotStatistics.restored >= 1)
            #expect(try Self.partitionState(restored, partition) == Self.partitionState(store, partition))
            #expect(try restored.openReader().events(channelID: "m1", afterSeq: 0, limit: 100).map(\.seq) == Array(1...40))
            [store, restored].forEach { $0.close() }
        }
    }

    /// A snapshot whose writing stopped after some of its parts (its owner deposed) leaves
    /// parts that replay skips, at the log's end or before later batches, as it skips a later
    /// part read without its first: the batches before them, never trimmed, hold the state.
    @Test(arguments: NATSBackend.allCases)
    func theLoggedPartsOfASnapshotThatStoppedAreSkipped(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let partition = try node.logChannelM1(events: 5)
            let subject = Self.layout.subject(of: .partition(partition))
            let header = ChannelLogLayout.snapshotHeader
            #expect(await node.publish(Array("first of two parts".utf8), to: subject, headers: [header: "1/2"]) != nil)

            let resumed = try node.open()
            #expect(try resumed.openReader().events(channelID: "m1", afterSeq: 0, limit: 100).map(\.seq) == Array(1...5))
            try resumed.write(.appendEvents([Self.event("m1", 6)]))
            resumed.close()
            #expect(await node.publish(Array("second of two parts".utf8), to: subject, headers: [header: "2/2"]) != nil)

            let again = try node.open()
            #expect(try again.openReader().events(channelID: "m1", afterSeq: 0, limit: 100).map(\.seq) == Array(1...6))
            #expect(again.snapshotStatistics.restored == 0)
            try again.write(.appendEvents([Self.event("m1", 7)]))
            again.close()
        }
    }

    /// Trimmed without a snapshot (by hand, or by a stream limit someone set), the log cannot be
    /// restored: the store refuses and names the missing sequences instead of running on half
    /// a partition.
    @Test(arguments: NATSBackend.allCases)
    func aLogTrimmedWithoutASnapshotIsRefusedByName(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let node = try Node(cluster)
            let partition = try node.logChannelM1(events: 5)
            let purged = await node.purge(Self.layout.streamName(of: .partition(partition)), below: 3)
            #expect(purged == 2)
            let failure = #expect(throws: StoreError.self) { try node.open() }
            #expect(failure?.description.contains("log sequences 1 to 2 are missing") == true, "\(String(describing: failure))")
        }
    }
}

extension Node {
    /// Channel m1 created with events 1 to `count` by a store opened and closed again: m1's partition.
    func logChannelM1(events count: Int64) throws -> Int {
        let store = try open()
        defer { store.close() }
        try store.write(.createChannel(JetStreamChannelStoreTests.channel("m1")))
        for seq in Int64(1)...count { try store.write(.appendEvents([JetStreamChannelStoreTests.event("m1", seq)])) }
        return JetStreamChannelStoreTests.layout.partitioning.partition(of: "m1")
    }
}

/// A client of a NATS cluster (either backend) on a loop of its own, opening channel stores on it.
final class Node: Sendable {
    let loop: EventLoop
    let jetStream: any JetStreamClient

    init(_ cluster: TestNATSCluster) throws {
        loop = EventLoop.start(name: "jetstream-store-test")
        jetStream = try cluster.connect(name: "store-test", loop: loop)
    }

    deinit { loop.stop() }

    func open(replicas: Int = 1, snapshots: SnapshotSchedule.Settings = .init(), fences: PartitionFences? = nil) throws -> JetStreamChannelStore {
        try JetStreamChannelStore.open(jetStream: jetStream, layout: JetStreamChannelStoreTests.layout, replicas: replicas,
                                       snapshots: snapshots, fences: fences, loop: loop)
    }

    /// Purges `stream` below `sequence` as an operator would; how many messages went.
    func purge(_ stream: String, below sequence: UInt64) async -> UInt64? {
        await withCheckedContinuation { done in
            loop.execute { [self] in
                guard let requests = try? NATSRequests(connection: jetStream.messaging, loop: loop) else { return done.resume(returning: nil) }
                requests.purge(stream: stream, below: sequence, timeout: .seconds(5)) { result in
                    withExtendedLifetime(requests) { done.resume(returning: try? result.get()) }
                }
            }
        }
    }

    /// ``publish(_:to:)`` sent from the loop, behind whatever the loop was asked to do before.
    func publishOnTheLoop(_ bytes: [UInt8], to subject: String) async -> UInt64? {
        await withCheckedContinuation { done in
            loop.execute { [jetStream, loop] in
                jetStream.publish(bytes, to: subject, loop: loop) { done.resume(returning: try? $0.get().sequence) }
            }
        }
    }

    /// Publishes raw bytes (as a damaged or foreign writer would); the stored sequence.
    func publish(_ bytes: [UInt8], to subject: String, headers: [String: String] = [:]) async -> UInt64? {
        await withCheckedContinuation { done in
            jetStream.publish(bytes, to: subject, headers: headers, loop: loop) { done.resume(returning: try? $0.get().sequence) }
        }
    }
}

extension JetStreamChannelStore {
    /// Submits and waits (tests only; never from the store's loop).
    func write(_ operations: [StoreOperation]) -> Result<Void, StoreError> {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<Void, StoreError>?>(nil)
        submit(WriteBatch(operations)) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    func write(_ operation: StoreOperation) throws {
        if case .createChannel(let record) = operation {
            let done = DispatchSemaphore(value: 0)
            let result = Mutex<Result<ChannelCreation, StoreError>?>(nil)
            createChannel(record) { outcome in
                result.withLock { $0 = outcome }
                done.signal()
            }
            done.wait()
            _ = try result.withLock { $0! }.get()
        } else {
            try write([operation]).get()
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
