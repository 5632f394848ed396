import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore

/// The contract of ``ChannelStoreWriter`` and ``ChannelStoreReader`` (docs/storage.md,
/// "Contracts"), on every implementation.
@Suite(.heavy) struct ChannelStoreContractTests {
    @Test(arguments: ChannelStoreKind.allCases)
    func aBatchIsAllOrNothingWhenItFailsInTheMiddle(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        let before = awaitResult { store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", 1)])]), completion: $0) }
        let failed = awaitResult { store.channelWriter.submit(WriteBatch([
            .updateState(ChannelStateUpdate(channelID: "m1", updatedAt: t0 + .seconds(5), lastSeq: 3)),
            .appendEvents([event("m1", 2), event("m1", 3)]),
            .appendEvents([event("m1", 1)]),   // logged already: fails here, in the middle
            .markStatus(channelID: "m1", status: .ending, end: nil, at: t0 + .seconds(5)),
        ]), completion: $0) }
        let unknown = awaitResult { store.channelWriter.submit(WriteBatch([
            .appendEvents([event("m1", 4)]),
            .updateState(ChannelStateUpdate(channelID: "nope", updatedAt: t0, lastSeq: 4)),
        ]), completion: $0) }
        let after = awaitResult { store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", 2)])]), completion: $0) }

        #expect(before.failure == nil && after.failure == nil, "the batches around the failing ones commit")
        #expect(failed.failure != nil && failed.failure?.isStorageFailure == false)
        #expect(unknown.failure == .unknownChannel("nope"))
        let reader = try store.channelReader()
        defer { reader.close() }
        let stored = try #require(try reader.channel(id: "m1"))
        #expect(stored.lastSeq == 0 && stored.status == .active, "nothing of the failed batch: \(stored)")
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1, 2])
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func theCompletionRunsOnItsOwnThreadOnceTheBatchIsReadableFromAFreshReader(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        let submitter = pthread_self()
        let seen = ResultBox<(onSubmitter: Bool, seqs: [Int64], lastSeq: Int64?)>()
        let done = DispatchSemaphore(value: 0)
        store.channelWriter.submit(WriteBatch([
            .appendEvents([event("m1", 1)]),
            .updateState(ChannelStateUpdate(channelID: "m1", updatedAt: t0 + .seconds(1), lastSeq: 1)),
        ])) { result in
            // A reader opened now (for SQLite: a new connection) already sees the commit.
            seen.value = Result {
                let reader = try store.channelReader()
                defer { reader.close() }
                return (pthread_equal(pthread_self(), submitter) != 0, try reader.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq),
                        try reader.channel(id: "m1")?.lastSeq)
            }.mapError { $0 as? StoreError ?? .closed }.flatMap { value in result.map { value } }
            done.signal()
        }
        done.wait()
        let value = try #require(try seen.value?.get())
        #expect(!value.onSubmitter, "the completion ran on the submitting thread")
        #expect(value.seqs == [1] && value.lastSeq == 1)
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func batchesCommitAndCompleteInSubmissionOrder(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        let order = ResultBox<[Int64]>()
        order.value = .success([])
        let done = DispatchGroup()
        for seq in Int64(1)...200 {
            done.enter()
            store.channelWriter.submit(WriteBatch([
                .appendEvents([event("m1", seq)]),
                .updateState(ChannelStateUpdate(channelID: "m1", updatedAt: t0 + .seconds(seq), lastSeq: seq)),
            ])) { result in
                if case .success = result { order.append(seq) }
                done.leave()
            }
        }
        done.wait()
        #expect(try order.value?.get() == Array(1...200), "completions out of submission order")
        let reader = try store.channelReader()
        defer { reader.close() }
        #expect(try reader.channel(id: "m1")?.lastSeq == 200, "a later batch's state is the one kept")
        // The tail in pages of 7: every event once, in seq order.
        var seqs: [Int64] = []
        while case let page = try reader.events(channelID: "m1", afterSeq: seqs.last ?? 0, limit: 7), !page.isEmpty {
            #expect(page.count <= 7)
            seqs += page.map(\.seq)
        }
        #expect(seqs == Array(1...200))
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func aCreateIntentIsIdempotentAndReconcilable(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        let first = try awaitResult { store.channelWriter.createChannel(channel("m1", status: .creating), completion: $0) }.get()
        var other = channel("m1", status: .creating)
        other.policyJSON = #"{"minInterval":9}"#
        let second = try awaitResult { store.channelWriter.createChannel(other, completion: $0) }.get()
        #expect(first.inserted && !second.inserted)
        #expect(second.record.policyJSON == #"{"minInterval":2}"#, "the second create answers the stored record")
        let reader = try store.channelReader()
        defer { reader.close() }
        #expect(try reader.channels(status: .creating).map(\.id) == ["m1"])
        #expect(try reader.channel(apnsChannelID: "apple-1") == nil)

        try awaitResult { store.channelWriter.submit(WriteBatch([.channelCreated(channelID: "m1", apnsChannelID: "apple-1", at: t0 + .seconds(1))]),
                                              completion: $0) }.get()
        #expect(try reader.channels(status: .creating).isEmpty)
        let created = try #require(try reader.channel(apnsChannelID: "apple-1"))
        #expect(created.id == "m1" && created.status == .active && created.updatedAt == t0 + .seconds(1))
        let lost = awaitResult { store.channelWriter.submit(WriteBatch([.channelCreated(channelID: "m2", apnsChannelID: "apple-2", at: t0)]),
                                                     completion: $0) }
        #expect(lost.failure == .unknownChannel("m2"))
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func channelsPageInIDOrderWithoutGapsOrRepeats(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        let ids = (0..<53).map { String(format: "match-%03d", ($0 * 37) % 53) }
        for id in ids { #expect(try awaitResult { store.channelWriter.createChannel(channel(id), completion: $0) }.get().inserted) }
        let reader = try store.channelReader()
        defer { reader.close() }
        var seen: [String] = []
        while case let page = try reader.channels(after: seen.last, limit: 10), !page.isEmpty { seen += page.map(\.id) }
        #expect(seen == ids.sorted())
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func endsTruncationAndDeletion(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m2"), completion: $0) }.get().inserted)
        let end = ChannelEnd(dismissAt: t0 + .seconds(600), endedAt: t0 + .seconds(60))
        try awaitResult { store.channelWriter.submit(WriteBatch([.appendEvents([event("m2", 1)])]), completion: $0) }.get()
        try awaitResult { store.channelWriter.submit(WriteBatch([
            .appendEvents((1...5).map { event("m1", $0) }),
            .truncateEvents(channelID: "m1", throughSeq: 3),
            .markStatus(channelID: "m1", status: .ended, end: end, at: t0 + .seconds(60)),
        ]), completion: $0) }.get()
        let reader = try store.channelReader()
        defer { reader.close() }
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [4, 5])
        #expect(try reader.channel(id: "m1")?.end == end)
        try awaitResult { store.channelWriter.submit(WriteBatch([.deleteChannel(channelID: "m1")]), completion: $0) }.get()
        #expect(try reader.channel(id: "m1") == nil)
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).isEmpty, "a deleted channel's log goes with it")
        #expect(try reader.events(channelID: "m2", afterSeq: 0, limit: 10).count == 1)
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func aStorageFailureFailsEveryWriteUntilTheStoreRecovers(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        store.failStorage()
        let failed = awaitResult { store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", 1)])]), completion: $0) }
        #expect(failed.failure?.isStorageFailure == true)
        #expect(store.channelWriter.health.isFailing && store.channelWriter.health.failingSince != nil)
        let reader = try store.channelReader()
        defer { reader.close() }
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).isEmpty)

        store.restoreStorage()
        let deadline = ContinuousClock.now + .seconds(30)
        while store.channelWriter.health.isFailing && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!store.channelWriter.health.isFailing, "the store did not find its storage writable again by itself")
        try awaitResult { store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", 1)])]), completion: $0) }.get()
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1])
    }

    @Test(arguments: ChannelStoreKind.allCases)
    func closeCommitsWhatIsQueuedAndRefusesLaterWrites(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        let done = DispatchGroup()
        for seq in Int64(1)...50 {
            done.enter()
            store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", seq)])])) { _ in done.leave() }
        }
        store.close()
        #expect(!store.channelWriter.isOpen)
        done.wait()
        let late = awaitResult { store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", 51)])]), completion: $0) }
        #expect(late.failure == .closed)

        try store.reopen()
        let reader = try store.channelReader()
        defer { reader.close() }
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 100).map(\.seq) == Array(1...50))
    }

    /// Completions run on the writer's own thread or queue; one that closes the store (its last
    /// owner let go there) must not wait for that thread to finish, which would be itself.
    @Test(arguments: ChannelStoreKind.allCases)
    func aCloseFromACompletionReturnsAndRefusesLaterWrites(kind: ChannelStoreKind) async throws {
        let store = try await kind.open()
        #expect(try awaitResult { store.channelWriter.createChannel(channel("m1"), completion: $0) }.get().inserted)
        let closed = DispatchSemaphore(value: 0)
        store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", 1)])])) { _ in
            store.close()
            closed.signal()
        }
        #expect(closed.wait(timeout: .now() + 10) == .success, "close() from a completion waited for its own thread")
        #expect(!store.channelWriter.isOpen)
        let late = awaitResult { store.channelWriter.submit(WriteBatch([.appendEvents([event("m1", 2)])]), completion: $0) }
        #expect(late.failure == .closed)
        try store.reopen()
        let reader = try store.channelReader()
        defer { reader.close() }
        #expect(try reader.events(channelID: "m1", afterSeq: 0, limit: 10).map(\.seq) == [1])
    }
}

extension ResultBox where T == [Int64] {
    func append(_ value: Int64) {
        let current = (try? self.value?.get()) ?? []
        self.value = .success(current + [value])
    }
}
