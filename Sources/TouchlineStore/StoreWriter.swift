import CSQLite
import Foundation
import Synchronization
import TouchlineCore
import TouchlineRuntime

/// Counts kept by a ``StoreWriter``: how well group commit is grouping.
public struct StoreWriterStatistics: Sendable, Equatable {
    /// Group transactions committed.
    public var transactions = 0
    /// Batches committed (each in its own savepoint).
    public var batches = 0
    /// Batches rolled back because one of their statements failed.
    public var failedBatches = 0
    /// Probe transactions tried while the store was failing.
    public var probes = 0

    public init(transactions: Int = 0, batches: Int = 0, failedBatches: Int = 0, probes: Int = 0) {
        self.transactions = transactions
        self.batches = batches
        self.failedBatches = failedBatches
        self.probes = probes
    }
}

/// Whether a ``StoreWriter`` can write: set by its own thread after every commit.
///
/// A storage failure (``StoreError/isStorageFailure``: disk full, I/O error) makes the store
/// *failing*: callers refuse new writes at once (503 with `Retry-After`) instead of piling them
/// on a disk that cannot take them, and readiness reports it. The writer then probes with a tiny
/// transaction every ``StoreWriter/probeInterval``; the first commit that succeeds, probe or
/// not, makes it healthy again, so it recovers by itself when the disk does.
public struct StoreHealth: Sendable, Equatable {
    /// The last storage failure, while the store is failing; nil when healthy.
    public var failure: StoreError?
    /// When the store started failing.
    public var failingSince: UnixTime?

    public var isFailing: Bool { failure != nil }

    public static let healthy = StoreHealth()
}

/// The single writer of a SQLite store, with group commit.
///
/// The writer owns its connection on a dedicated thread (not an `EventLoop`: a commit blocks on
/// `write`/`fsync` and nothing else should wait behind it). Batches may be submitted from any
/// thread. Everything that arrives while a transaction is running is committed by the next one,
/// so a burst of N batches costs far fewer than N commits. Each batch runs inside its own
/// `SAVEPOINT`, so a failing statement rolls back that batch alone; the others in the group
/// still commit. Completions run on the writer thread after `COMMIT` returned, i.e. once the
/// batch is durable; hop to your own loop from there, and never wait in a completion for another
/// store write (it would wait for its own thread).
///
/// The thread keeps the writer alive until ``close()``, which every owner must call.
public final class StoreWriter: ChannelStoreWriter, @unchecked Sendable {
    /// A unit of work: `apply` runs in a savepoint on the writer thread, `complete` after commit.
    /// Internal so that other record families (tokens, personal jobs) can share the group commit.
    struct Job: Sendable {
        let apply: @Sendable (SQLiteConnection) throws -> Void
        let complete: @Sendable (StoreError?) -> Void
        /// Applied and rolled back: whether it would commit now, without committing it.
        var checkOnly = false
        /// Applied on its own, outside any transaction, in its turn between the group
        /// transactions of the jobs before and after it: for what SQLite refuses inside one (a
        /// backup into this file). `apply` makes its own transaction.
        var outsideTransaction = false
        /// When a deferrable job was submitted (nil: not deferrable); it is held from then up to
        /// the writer's deferral for a write to commit with.
        var deferredAt: ContinuousClock.Instant?
    }

    private struct Queue {
        var jobs: [Job] = []
        /// The writer waits for a write to commit the queued deferrable ones with.
        var holding = false
        var closed = false
        var statistics = StoreWriterStatistics()
        var health = StoreHealth.healthy
    }

    /// How long the writer waits at most, between two transactions, for its oversized log to be
    /// copied back (``WALCheckpointer``).
    static let oversizedLogPause: Duration = .seconds(2)

    /// How often a failing store tries a probe transaction.
    public static let probeInterval = Duration.seconds(1)

    /// How long a deferrable batch (``WriteBatch/deferrable``) waits at most for another write
    /// to commit with. A crash in it loses the channel's bookkeeping after a push, as a crash
    /// between a push and its save always could: the restarted channel sends its last state
    /// again (docs/storage.md, "Saves that wait for the next commit").
    public static let deferral: Duration = .milliseconds(10)
    private let deferralLimit: Duration

    public let path: String
    /// Touched only by the writer thread once it has started.
    private let connection: SQLiteConnection
    /// Writes the log back into the database off the commit path (see ``WALCheckpointer``).
    private let checkpointer: WALCheckpointer
    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// The writer thread, so ``close()`` knows when it runs there (set once it has started).
    private let writerThread = Mutex<pthread_t?>(nil)
    /// While this file exists every commit fails as if the disk were full: a fault-injection
    /// hook for tests of the failure path where a real full filesystem cannot be made.
    private let faultFile: String?
    private let clock: any WallClock

    /// Opens (creating if needed) the database at `path`, brings its schema up to date and starts
    /// the writer thread. `synchronous: .normal` keeps committed data across a process crash
    /// (`kill -9`); `.full` also across power loss, at the cost of an fsync per group commit.
    /// `niceness` above 0 lowers the writer's and the checkpointer's CPU priority: a store whose
    /// commits nobody waits for urgently (the personal queue's) then gives way to the others.
    /// `slice` asks for short time slices on the writer thread, for a store whose commits an
    /// acknowledgement waits for (see `requestCurrentThreadSlice`).
    /// `faultFile`: see the property of that name (nil in production).
    /// `walLimitBytes`: the write-ahead log's size above which the writer checkpoints it between
    /// its transactions, and to which the file is truncated when it restarts (``WALCheckpointer``).
    /// `deferral`: how long a deferrable batch waits for another write (``deferral``).
    public init(path: String, synchronous: SQLiteSynchronous = .normal, niceness: Int32 = 0,
                slice: Duration? = nil, faultFile: String? = nil, clock: any WallClock = SystemClock(),
                walLimitBytes: Int = 64 << 20, deferral: Duration = StoreWriter.deferral) throws(StoreError) {
        self.path = path
        self.deferralLimit = deferral
        self.faultFile = faultFile
        self.clock = clock
        connection = try StoreError.wrapping {
            try StoreIntegrity.refuseEmptyFile(at: path)
            let connection = try SQLiteConnection(path: path, synchronous: synchronous)
            try StoreIntegrity.check(connection)
            try SQLiteSchema.migrate(connection)
            try connection.execute("PRAGMA wal_autocheckpoint=0")
            try connection.execute("PRAGMA journal_size_limit=\(walLimitBytes)")
            return connection
        }
        checkpointer = try StoreError.wrapping { try WALCheckpointer(path: path, synchronous: synchronous, niceness: niceness,
                                                                               oversizedBytes: walLimitBytes) }
        let thread = Thread { [self] in
            writerThread.withLock { $0 = pthread_self() }
            nameCurrentThread("store-writer")
            if niceness > 0 { _ = lowerCurrentThreadPriority(niceness: niceness) }
            if let slice { _ = requestCurrentThreadSlice(slice) }
            run()
        }
        thread.start()
    }

    public var statistics: StoreWriterStatistics { queue.withLock { $0.statistics } }

    /// Batches waiting for the next group transaction (not counting the one being committed): a
    /// gauge for metrics; a queue that keeps growing means the disk cannot keep up.
    public var queueDepth: Int { queue.withLock { $0.jobs.count } }

    /// False once ``close()`` was called: no more writes are taken (readiness checks).
    public var isOpen: Bool { queue.withLock { !$0.closed } }

    /// Whether writes currently succeed (a mutex read; cheap enough for every request).
    public var health: StoreHealth { queue.withLock { $0.health } }

    public func submit(_ batch: WriteBatch, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        enqueue(Job(apply: { db in
            for operation in batch.operations { try SQLiteChannelRows.apply(operation, on: db) }
        }, complete: { error in
            completion(error.map { .failure($0) } ?? .success(()))
        }, deferredAt: batch.deferrable ? .now : nil))
    }

    public func createChannel(_ record: ChannelRecord, completion: @escaping @Sendable (Result<ChannelCreation, StoreError>) -> Void) {
        let outcome = Mutex<ChannelCreation?>(nil)
        enqueue(Job(apply: { db in
            let inserted = try SQLiteChannelRows.insert(record, on: db)
            let stored = try SQLiteChannelRows.channel(id: record.id, on: db) ?? record
            outcome.withLock { $0 = ChannelCreation(record: stored, inserted: inserted) }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(outcome.withLock { $0! }))
        }))
    }

    /// Commits what is queued, then stops the thread and closes the connection. Later submits
    /// fail with `.closed`. On the writer thread itself (the last owner released in a
    /// completion) it cannot wait for itself: it refuses later writes, and the thread closes the
    /// connection once it has drained the queue.
    public func close() {
        let wasOpen = queue.withLock { q -> Bool in
            defer { q.closed = true }
            return !q.closed
        }
        guard wasOpen else { return }
        wake.signal()
        let onWriterThread = writerThread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if !onWriterThread { finished.wait() }
        checkpointer.stop()
    }

    func enqueue(_ job: Job) {
        enum Admission { case wakeWriter, queued, refused }
        let admission = queue.withLock { q -> Admission in
            if q.closed { return .refused }
            q.jobs.append(job)
            return q.jobs.count == 1 || (q.holding && job.deferredAt == nil) ? .wakeWriter : .queued
        }
        switch admission {
        case .wakeWriter: wake.signal()
        case .queued: break
        case .refused: job.complete(.closed)
        }
    }

    /// The writer thread: commit whatever is queued, sleep when nothing is, leave once closed and
    /// drained. Deferrable jobs alone wait up to their deferral for another to commit with.
    private func run() {
        while true {
            let (jobs, closed, hold) = queue.withLock { q -> ([Job], Bool, Duration?) in
                if !q.closed, let first = q.jobs.first?.deferredAt, q.jobs.allSatisfy({ $0.deferredAt != nil }) {
                    let left = first + deferralLimit - .now
                    if left > .zero {
                        q.holding = true
                        return ([], false, left)
                    }
                }
                q.holding = false
                defer { q.jobs = [] }
                return (q.jobs, q.closed, nil)
            }
            if let hold {
                _ = wake.wait(timeout: .now() + .nanoseconds(Int(hold.inNanoseconds)))
            } else if !jobs.isEmpty {
                commitInOrder(jobs)
                if checkpointer.takeOversized() { checkpointBetweenTransactions() }
            } else if closed {
                break
            } else if health.isFailing {
                if wake.wait(timeout: .now() + .nanoseconds(Int(Self.probeInterval.inNanoseconds))) == .timedOut { probe() }
            } else {
                wake.wait()
            }
        }
        connection.close()
        finished.signal()
    }

    /// The jobs in their order: a group transaction for each run of them, and those that need the
    /// connection outside one (``Job/outsideTransaction``) alone between.
    private func commitInOrder(_ jobs: [Job]) {
        guard jobs.contains(where: \.outsideTransaction) else { return commit(jobs) }
        var group: [Job] = []
        for job in jobs {
            guard job.outsideTransaction else {
                group.append(job)
                continue
            }
            if !group.isEmpty { commit(group) }
            group.removeAll()
            applyAlone(job)
        }
        if !group.isEmpty { commit(group) }
    }

    /// A job that makes its own transaction.
    private func applyAlone(_ job: Job) {
        var failure: StoreError?
        do { try job.apply(connection) } catch { failure = StoreError(error) }
        let storageFailure = failure.flatMap { $0.isStorageFailure ? $0 : nil }
        queue.withLock { q in
            if failure == nil {
                q.statistics.transactions += 1
                q.statistics.batches += 1
            } else {
                q.statistics.failedBatches += 1
            }
            q.health.note(storageFailure, committed: failure == nil, at: clock.now())
        }
        job.complete(failure)
    }

    /// One group transaction: a savepoint per job, one COMMIT, then every completion.
    private func commit(_ jobs: [Job]) {
        var outcomes = [StoreError?](repeating: nil, count: jobs.count)
        var committed = false
        do {
            try connection.run("BEGIN IMMEDIATE")
            for (index, job) in jobs.enumerated() {
                try connection.run("SAVEPOINT batch")
                do {
                    try job.apply(connection)
                    if job.checkOnly { try connection.run("ROLLBACK TO batch") }
                    try connection.run("RELEASE batch")
                } catch {
                    outcomes[index] = StoreError(error)
                    try connection.run("ROLLBACK TO batch")
                    try connection.run("RELEASE batch")
                }
            }
            try injectFault()
            try connection.run("COMMIT")
            committed = true
        } catch {
            _ = try? connection.run("ROLLBACK")
            let failure = StoreError(error)
            outcomes = outcomes.map { _ in failure }
        }
        let failed = outcomes.count(where: { $0 != nil })
        let storageFailure = outcomes.lazy.compactMap { $0 }.first { $0.isStorageFailure }
        queue.withLock { q in
            if committed { q.statistics.transactions += 1 }
            q.statistics.batches += jobs.count - failed
            q.statistics.failedBatches += failed
            q.health.note(storageFailure, committed: committed && storageFailure == nil, at: clock.now())
        }
        for (job, outcome) in zip(jobs, outcomes) { job.complete(outcome) }
    }

    /// The log outgrew what the checkpointer beside the writer brings back (``WALCheckpointer``):
    /// copied back here, where nothing is appended meanwhile, so the next transaction restarts
    /// it. A stall of the writer (``oversizedLogPause`` at most), but only while it writes faster
    /// than its log can be copied back.
    private func checkpointBetweenTransactions() {
        // The checkpointer's pass in progress holds the checkpoint lock (this one is then busy):
        // with nothing appended meanwhile it ends soon, and the next pass copies the rest.
        let deadline = ContinuousClock.now + Self.oversizedLogPause
        repeat {
            let outcome = try? connection.query("PRAGMA wal_checkpoint(PASSIVE)") { ($0.int64(at: 0), $0.int64(at: 1), $0.int64(at: 2)) }.first
            if let (busy, log, copied) = outcome, busy == 0, copied >= log { return }
            usleep(5_000)
        } while ContinuousClock.now < deadline
    }

    /// A transaction that writes one small row: succeeds only when the disk takes writes again.
    private func probe() {
        var failure: StoreError?
        do {
            try connection.run("BEGIN IMMEDIATE")
            try connection.run("INSERT INTO store_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                               [.integer(clock.now().nanoseconds)])
            try injectFault()
            try connection.run("COMMIT")
        } catch {
            _ = try? connection.run("ROLLBACK")
            failure = StoreError(error)
        }
        queue.withLock { q in
            q.statistics.probes += 1
            q.health.note(failure, committed: failure == nil, at: clock.now())
        }
    }

    private func injectFault() throws {
        guard let faultFile, access(faultFile, F_OK) == 0 else { return }
        throw SQLiteError(code: SQLITE_FULL, message: "database or disk is full (injected: \(faultFile) exists)", statement: "COMMIT")
    }
}

extension StoreHealth {
    /// Records the outcome of one transaction.
    fileprivate mutating func note(_ storageFailure: StoreError?, committed: Bool, at now: UnixTime) {
        if let storageFailure {
            if failure == nil { failingSince = now }
            failure = storageFailure
        } else if committed {
            self = .healthy
        }
    }
}

extension ChannelStoreWriter {
    /// Submits `batch` and waits for it to be durable (control paths and tests).
    public func submit(_ batch: WriteBatch) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            submit(batch) { continuation.resume(with: $0) }
        }
    }

    /// Idempotent create, awaited (control paths and tests).
    public func createChannel(_ record: ChannelRecord) async throws -> ChannelCreation {
        try await withCheckedThrowingContinuation { continuation in
            createChannel(record) { continuation.resume(with: $0) }
        }
    }
}
