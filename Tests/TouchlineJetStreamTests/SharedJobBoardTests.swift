import Foundation
import NATS
import Synchronization
import Testing
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineTesting

/// The cluster's job bucket on a 3-node cluster, real and in memory: what a finished job leaves behind.
@Suite("Shared job board, on nats-server and in memory")
struct SharedJobBoardTests {
    /// A finished job's slice and cancellation keys become deletion markers, not a purge: a
    /// watch already running skips them as it skips every deletion, a watch started later sees
    /// the job's entry and none of its slices, and the bucket keeps one message per key.
    @Test(arguments: NATSBackend.allCases)
    func aFinishedJobsKeysBecomeDeletionMarkersThatWatchesSkip(backend: NATSBackend) async throws {
        try await backend.withCluster(size: 3) { cluster in
            let writer = try Board(cluster: cluster, name: "writer")
            defer { writer.close() }
            let running = try Board(cluster: cluster, name: "running")
            defer { running.close() }
            try running.startWatching()

            let job = SharedJobEntry(id: "job-1", createdAtNanoseconds: 1, audience: "{}", payload: Data("{}".utf8), priority: 5,
                                     expirationNanoseconds: nil, slices: 16, registrySequence: 0)
            let checkpoint = FanOutCheckpoint(cursor: nil, counters: FanOutCounters(), pending: [], endedAfterCursor: [])
            // The bucket was just made: its first write waits until the writer's server hears it.
            try await Board.onceHeard { await writer.result { board, done in board.publish(job) { done($0.map { _ in () }) } } }
            // The running watch has delivered something before the slices are written: a watch
            // recreated by the client before its first delivery (a loaded run: heartbeats
            // missed) starts again from each key's last value, and would see markers only.
            try await running.untilSeen(jobID: job.id)
            for index in 0..<2 {
                let key = SharedJobPlan.SliceKey(jobID: job.id, slice: try #require(AudienceSlice(index: index, count: 16)))
                try await writer.call { board, done in
                    board.publish(SliceEntry(checkpoint: checkpoint, isFinished: true, instance: "writer"), for: key, fence: FixedFence(holds: true),
                                  over: 0) { done($0.map { _ in () }) }
                }
            }
            try await writer.call { board, done in board.cancel(jobID: job.id, atNanoseconds: 2) { done($0) } }
            // The bucket keeps one message per key: a value its marker replaced before the
            // servers delivered it to a watch is never delivered (a watch promises each key's
            // latest value, not every value). So the running watch is let see the writes first.
            try await running.until("the two slices and the cancellation seen") { running.slices == 2 && running.cancellations == 1 }
            let deleted = Mutex<Int>(0)
            try await writer.call { board, done in
                board.forget(jobID: job.id, slices: 16, scheduled: false) { result in done(result.map { count in deleted.withLock { $0 = count } }) }
            }
            #expect(deleted.withLock { $0 } == 17, "sixteen slices (two of them written) and the cancellation")
            // A job published after the markers: once a watch shows it, it has shown all before it.
            let last = { var entry = job; entry.id = "job-2"; return entry }()
            try await writer.call { board, done in board.publish(last) { done($0.map { _ in () }) } }

            let later = try Board(cluster: cluster, name: "later")
            defer { later.close() }
            try later.startWatching()
            for board in [running, later] { try await board.untilSeen(jobID: "job-2") }
            #expect(running.slices == 2 && running.cancellations == 1,
                    "the running watch saw the writes before the markers: \(running.slices) slices, \(running.cancellations) cancellations")
            #expect(later.slices == 0 && later.cancellations == 0, "a later watch sees no slice or cancellation of the finished job")
            #expect(later.jobs == ["job-1", "job-2"])
            #expect(running.unreadable.isEmpty && later.unreadable.isEmpty, "markers are not unreadable entries")
            let messages = try writer.bucketMessages()
            #expect(messages == 19, "one message per key (two entries, sixteen slice markers, one cancellation marker), nothing purged")

            // The job expires: its entry's marker is written only under a fence that holds, every
            // watch sees it, and the purge then leaves nothing of the job in the bucket.
            let lapsed = await writer.result { board, done in board.remove(jobID: job.id, fence: FixedFence(holds: false), completion: done) }
            #expect(lapsed.failure?.detail.contains("no longer holds") == true, "\(lapsed)")
            #expect(try writer.bucketMessages() == 19, "nothing written under a lapsed fence")
            try await writer.call { board, done in board.remove(jobID: job.id, fence: FixedFence(holds: true), completion: done) }
            for board in [running, later] { try await board.untilRemoved(jobID: job.id) }
            let purged = Mutex<UInt64>(0)
            try await writer.call { board, done in board.purge(jobID: job.id) { result in done(result.map { count in purged.withLock { $0 = count } }) } }
            #expect(purged.withLock { $0 } == 18, "the entry's marker, sixteen slice markers and the cancellation's")
            #expect(try writer.bucketMessages() == 1, "job-2's entry alone")
            let afterPurge = try Board(cluster: cluster, name: "after-purge")
            defer { afterPurge.close() }
            try afterPurge.startWatching()
            try await afterPurge.untilSeen(jobID: "job-2")
            #expect(afterPurge.jobs == ["job-2"] && afterPurge.removed.isEmpty && afterPurge.slices == 0)
        }
    }
}

extension SharedJobBoardTests {
    /// A watch asked for while the bucket's stream answers nothing (a bucket just made whose
    /// stream has no leader yet, on a loaded host) is asked for again, and starts once the
    /// stream answers: a gateway's start does not fail on the first unanswered request.
    @Test func aWatchAskedForBeforeTheBucketAnswersStartsOnceItDoes() async throws {
        try await NATSBackend.inMemory.withCluster(size: 3) { cluster in
            let writer = try Board(cluster: cluster, name: "writer")
            defer { writer.close() }
            let job = SharedJobEntry(id: "job-1", createdAtNanoseconds: 1, audience: "{}", payload: Data("{}".utf8), priority: 5,
                                     expirationNanoseconds: nil, slices: 16, registrySequence: 0)
            try await writer.call { board, done in board.publish(job) { done($0.map { _ in () }) } }
            let watcher = try Board(cluster: cluster, name: "watcher")
            defer { watcher.close() }
            let inMemory = try #require(cluster.inMemory)
            inMemory.answerCalls(of: "watcher", false)
            let started = Task.detached { try watcher.startWatching() }
            try await Task.sleep(for: .milliseconds(600))
            inMemory.answerCalls(of: "watcher", true)
            try await started.value
            try await watcher.untilSeen(jobID: job.id)
            #expect(watcher.jobs == [job.id])
        }
    }

    /// A slice's checkpoints only move forward from the one their writer ran from: a save over
    /// an older revision (a deposed owner's late save, a save of an owner that has not seen the
    /// newer one) is refused, and a save whose fence no longer holds is not sent at all.
    @Test(arguments: NATSBackend.allCases)
    func sliceSavesAreStoredOnlyOverTheSaveTheyRanFromAndUnderAFenceThatHolds(backend: NATSBackend) async throws {
        try await backend.withCluster(size: 3) { cluster in
            let owner = try Board(cluster: cluster, name: "owner")
            defer { owner.close() }
            let key = SharedJobPlan.SliceKey(jobID: "job-1", slice: try #require(AudienceSlice(index: 3, count: 16)))
            func save(_ sent: Int, over previous: UInt64, holds: Bool = true) async -> Result<UInt64, NATSError> {
                var counters = FanOutCounters()
                counters.sent = sent
                let entry = SliceEntry(checkpoint: FanOutCheckpoint(cursor: nil, counters: counters, pending: [], endedAfterCursor: []),
                                       isFinished: false, instance: "owner")
                return await owner.result { board, done in board.publish(entry, for: key, fence: FixedFence(holds: holds), over: previous, completion: done) }
            }
            let firstRevision = try await Board.onceHeard { await save(100, over: 0) }
            let second = try await save(200, over: firstRevision).get()
            let late = await save(150, over: firstRevision)
            #expect(late.failure?.isWrongLastSequence == true, "a save over a revision no longer the last: \(late)")
            let againFirst = await save(50, over: 0)
            #expect(againFirst.failure?.isWrongLastSequence == true, "a first save of a slice saved already: \(againFirst)")
            let last = try owner.bucketLastSequence()
            let lapsed = await save(300, over: second, holds: false)
            #expect(lapsed.failure?.detail.contains("no longer holds; not saved") == true, "\(lapsed)")
            #expect(try owner.bucketLastSequence() == last, "nothing sent under a fence that no longer holds")
            _ = try await save(300, over: second).get()
        }
    }
}

/// A side effect's fence fixed at holding or not.
private struct FixedFence: SideEffectFence {
    let holds: Bool
}

/// One gateway's job board on a connection and loop of its own, with what its watch saw.
private final class Board: @unchecked Sendable {
    let loop: EventLoop
    let jetStream: any JetStreamClient
    let board: SharedJobBoard
    private let seen = Mutex<(jobs: [String], slices: Int, cancellations: Int, unreadable: [String], removed: [String])>(([], 0, 0, [], []))

    init(cluster: TestNATSCluster, name: String) throws {
        loop = EventLoop.start(name: name)
        jetStream = try cluster.connect(name: name, loop: loop)
        board = try SharedJobBoard.open(jetStream: jetStream, prefix: "test", replicas: 3, loop: loop)
    }

    var jobs: [String] { seen.withLock { $0.jobs } }
    var slices: Int { seen.withLock { $0.slices } }
    var cancellations: Int { seen.withLock { $0.cancellations } }
    var unreadable: [String] { seen.withLock { $0.unreadable } }
    var removed: [String] { seen.withLock { $0.removed } }

    func startWatching() throws {
        try board.start(onChange: { [self] change in
            seen.withLock {
                switch change {
                case .job(let entry): $0.jobs.append(entry.id)
                case .slice: $0.slices += 1
                case .cancelled: $0.cancellations += 1
                case .started, .withdrawn: break
                case .removed(let jobID): $0.removed.append(jobID)
                }
            }
        }, onUnreadable: { [self] key in seen.withLock { $0.unreadable.append(key) } })
    }

    /// Runs `body` on the loop and waits for the result it reports.
    func call(_ body: @escaping @Sendable (SharedJobBoard, @escaping @Sendable (Result<Void, NATSError>) -> Void) -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.execute { [board] in body(board) { continuation.resume(with: $0.mapError { $0 as any Error }) } }
        }
    }

    func untilRemoved(jobID: String) async throws {
        try await until("\(jobID)'s removal seen") { removed.contains(jobID) }
    }

    func untilSeen(jobID: String) async throws {
        try await until("\(jobID) seen") { jobs.contains(jobID) }
    }

    /// Waits up to 20 s for what the watch delivered to satisfy `condition`.
    func until(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw NATSError(status: 0, operation: "watch", detail: "not within 20 s: \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func bucketMessages() throws -> UInt64 { try jetStream.streamState("KV_\(board.bucket)")?.messages ?? 0 }
    func bucketLastSequence() throws -> UInt64 { try jetStream.streamState("KV_\(board.bucket)")?.lastSequence ?? 0 }

    /// What `attempt` answers, made again while it is "no responders": a bucket just made may
    /// not be heard by every server yet, and no responders stores nothing.
    static func onceHeard<T>(_ attempt: () async -> Result<T, NATSError>) async throws -> T {
        var result = await attempt()
        let deadline = ContinuousClock.now + .seconds(10)
        while case .failure(let error) = result, error.status == NATSError.noResponders(operation: "").status, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            result = await attempt()
        }
        return try result.get()
    }

    /// A call on the loop whose answer is awaited as it is.
    func result<T: Sendable>(_ body: @escaping @Sendable (SharedJobBoard, @escaping @Sendable (Result<T, NATSError>) -> Void) -> Void) async -> Result<T, NATSError> {
        await withCheckedContinuation { continuation in
            loop.execute { [board] in body(board) { continuation.resume(returning: $0) } }
        }
    }

    func close() {
        try? loop.sync { self.board.stop() }
        jetStream.messaging.close()
        loop.stop()
    }
}
