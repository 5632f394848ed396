import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

@Suite(.heavy) struct GroupCommitTests {
    /// A failing batch leaves nothing behind, and the batches committed in the same transaction survive.
    @Test func aFailingBatchRollsBackAloneInsideTheGroup() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        _ = try await writer.createChannel(channel("m"))
        try await writer.submit(WriteBatch([.appendEvents([event("m", 1)])]))
        let before = writer.statistics

        let lock = try WriteLockHolder(path: path)
        writer.parkBehindHeldLock()
        let results = Mutex<[String: Result<Void, StoreError>]>([:])
        let done = DispatchGroup()
        let batches: [(String, WriteBatch)] = [
            ("good-1", WriteBatch([.createChannel(channel("a")), .appendEvents([event("a", 1)])])),
            ("bad", WriteBatch([
                .createChannel(channel("b")),
                .appendEvents([event("m", 2)]),
                .updateState(ChannelStateUpdate(channelID: "m", updatedAt: t0, lastSeq: 2)),
                .appendEvents([event("m", 1)]),
            ])),
            ("good-2", WriteBatch([.appendEvents([event("m", 3)])])),
        ]
        for (name, batch) in batches {
            done.enter()
            writer.submit(batch) { result in
                results.withLock { $0[name] = result }
                done.leave()
            }
        }
        try lock.release()
        await everyoneLeft(done)

        let outcome = results.withLock { $0 }
        #expect((try? outcome["good-1"]?.get()) != nil)
        #expect((try? outcome["good-2"]?.get()) != nil)
        guard case .failure(.database(let error)) = outcome["bad"] else {
            Issue.record("the bad batch should fail on its duplicate event, got \(String(describing: outcome["bad"]))")
            return
        }
        #expect(error.isConstraintViolation)

        let after = writer.statistics
        #expect(after.transactions - before.transactions == 2, "the parked batch, then the three together")
        #expect(after.failedBatches - before.failedBatches == 1)

        let reader = try SQLiteChannelReader(path: path)
        #expect(try reader.channel(id: "a") != nil)
        #expect(try reader.channel(id: "b") == nil)
        #expect(try reader.channel(id: "m")?.lastSeq == 0)
        #expect(try reader.events(channelID: "m", afterSeq: 0, limit: 10).map(\.seq) == [1, 3])
    }

    /// A deferrable batch (a channel's bookkeeping after a push) waits for the next write and
    /// commits in its transaction, before it; alone, it commits once its deferral is over; a
    /// close commits it at once. (Deferrals of a minute make the first and last cases certain.)
    @Test func aDeferrableBatchCommitsWithTheNextWriteBeforeIt() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let writer = try StoreWriter(path: path, deferral: .seconds(60))
        defer { writer.close() }
        try await writer.submit(WriteBatch([.createChannel(channel("m")), .createChannel(channel("n"))]))
        let before = writer.statistics
        let order = Mutex<[String]>([])
        let done = DispatchGroup()
        for (name, batch) in [("save", WriteBatch([.updateState(ChannelStateUpdate(channelID: "m", updatedAt: t0, lastSeq: 0))], deferrable: true)),
                              ("event", WriteBatch([.appendEvents([event("n", 1)])]))] {
            done.enter()
            writer.submit(batch) { result in
                let outcome = switch result {
                case .success: "committed"
                case .failure(let error): "\(error)"
                }
                order.withLock { $0.append("\(name) \(outcome)") }
                done.leave()
            }
        }
        await everyoneLeft(done)
        #expect(order.withLock { $0 } == ["save committed", "event committed"])
        #expect(writer.statistics.transactions - before.transactions == 1, "the save rode with the event")
    }

    @Test func aDeferrableBatchAloneCommitsAfterItsDeferralAndACloseCommitsItAtOnce() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let quick = try StoreWriter(path: path, deferral: .milliseconds(20))
        try await quick.submit(WriteBatch([.createChannel(channel("m"))]))
        try await quick.submit(WriteBatch([.appendEvents([event("m", 1)])], deferrable: true))
        quick.close()
        #expect(try SQLiteChannelReader(path: path).events(channelID: "m", afterSeq: 0, limit: 10).map(\.seq) == [1])

        let patient = try StoreWriter(path: path, deferral: .seconds(60))
        let committed = Mutex<Result<Void, StoreError>?>(nil)
        patient.submit(WriteBatch([.appendEvents([event("m", 2)])], deferrable: true)) { result in committed.withLock { $0 = result } }
        let closing = ContinuousClock.now
        patient.close()
        #expect(ContinuousClock.now - closing < .seconds(30), "the close waited for the deferral")
        #expect(committed.withLock { $0 }.map { (try? $0.get()) != nil } == true)
        #expect(try SQLiteChannelReader(path: path).events(channelID: "m", afterSeq: 0, limit: 10).map(\.seq) == [1, 2])
    }

    /// 1,000 batches submitted from 8 threads while the writer waits for the lock commit in one transaction.
    @Test func concurrentSubmitsShareTransactions() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let writer = try StoreWriter(path: path)
        defer { writer.close() }
        try await writer.submit(WriteBatch((0..<8).map { .createChannel(channel("t\($0)")) }))
        let before = writer.statistics

        let lock = try WriteLockHolder(path: path)
        writer.parkBehindHeldLock()
        let done = DispatchGroup()
        let failures = Atomic<Int>(0)
        await onThreads(8) { thread in
            for seq in 1...125 {
                done.enter()
                writer.submit(WriteBatch([.appendEvents([event("t\(thread)", Int64(seq))])])) { result in
                    if case .failure = result { failures.add(1, ordering: .relaxed) }
                    done.leave()
                }
            }
        }
        try lock.release()
        await everyoneLeft(done)

        let after = writer.statistics
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(after.batches - before.batches == 1_001)
        #expect(after.transactions - before.transactions == 2, "the parked batch, then all 1,000 together")
        let reader = try SQLiteChannelReader(path: path)
        for thread in 0..<8 {
            #expect(try reader.events(channelID: "t\(thread)", afterSeq: 0, limit: 200).map(\.seq) == Array(1...125))
        }
    }

    /// Without a lock held, grouping comes from commits taking longer than submits; printed, not asserted.
    @Test func naturalGroupingIsReported() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit(WriteBatch((0..<8).map { .createChannel(channel("t\($0)")) }))
        let before = writer.statistics
        let done = DispatchGroup()
        await onThreads(8) { thread in
            for seq in 1...125 {
                done.enter()
                writer.submit(WriteBatch([.appendEvents([event("t\(thread)", Int64(seq))])])) { _ in done.leave() }
            }
        }
        await everyoneLeft(done)
        let after = writer.statistics
        #expect(after.batches - before.batches == 1_000)
        print("group commit: 1000 batches from 8 threads in \(after.transactions - before.transactions) transactions")
    }
}
