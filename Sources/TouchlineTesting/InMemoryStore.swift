import Dispatch
import Synchronization
import TouchlineCore
import TouchlineStore

/// A store held in memory, for tests: the writer of both families (``ChannelStoreWriter`` and
/// ``PersonalStoreWriter``, like one SQLite file's ``StoreWriter``) and, through
/// ``openReader()``, readers of what it committed.
///
/// It keeps the writers' contract as the SQLite store does: each batch is applied to a copy of
/// the tables that replaces them only when every operation succeeded (all or nothing); batches
/// commit one at a time in submission order on a serial queue of their own, and their
/// completions run there, after the commit is visible to every reader (never on the submitter's
/// thread, never inside `submit`). ``failStorage(with:)`` is the failure switch: every commit
/// then fails as a full disk would, and health turns failing until ``restoreStorage()``, after
/// which a probe makes it healthy again. ``holdCommits()`` is the hold switch: commits then wait
/// as they would behind another connection's write lock.
public final class InMemoryStore: ChannelStoreWriter, PersonalStoreWriter, @unchecked Sendable {
    private struct Control {
        var writer = WriterState()
        var failure: StoreError?
        var held = false
    }

    /// The committed tables, shared with the readers.
    let committed: InMemoryCommitted
    private let control = Mutex(Control())
    private let queue: DispatchQueue
    private let clock: any WallClock
    private let name: String

    /// `name` labels the writer's queue (seen in thread listings).
    public convenience init(name: String = "in-memory-store", clock: any WallClock = SystemClock()) {
        self.init(name: name, clock: clock, committed: InMemoryCommitted())
    }

    private init(name: String, clock: any WallClock, committed: InMemoryCommitted) {
        queue = DispatchQueue(label: name)
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(queue))
        self.name = name
        self.clock = clock
        self.committed = committed
    }

    /// A new writer on what this one committed, as a store file is opened again after a restart
    /// (close this one first: like a file, the tables have one writer at a time).
    public func reopened() -> InMemoryStore { InMemoryStore(name: name, clock: clock, committed: committed) }

    /// A reader of the committed tables (any thread; close it when done).
    public func openReader() -> InMemoryStoreReader { InMemoryStoreReader(store: self) }

    // MARK: The failure switch

    /// From now on every commit fails with `error` (by default a storage failure, as a full disk).
    public func failStorage(with error: StoreError = .storageFailure("database or disk is full (simulated)")) {
        control.withLock { $0.failure = error }
    }

    /// Commits succeed again; the writer's probe (on its queue) makes the store healthy.
    public func restoreStorage() {
        control.withLock { $0.failure = nil }
        queue.async { [self] in
            control.withLock { c in
                c.writer.statistics.probes += 1
                if c.failure == nil { c.writer.health = .healthy }
            }
        }
    }

    // MARK: The hold switch

    /// From now on commits wait, queued in order, until ``releaseCommits()``: as behind another
    /// connection that holds the file's write lock, for as long as the test wants (a commit
    /// already running finishes first). Release before the store goes away.
    public func holdCommits() {
        control.withLock { c in
            precondition(!c.held, "the commits are held already")
            c.held = true
        }
        queue.suspend()
    }

    /// Commits go on, in the order they were submitted.
    public func releaseCommits() {
        control.withLock { c in
            precondition(c.held, "the commits are not held")
            c.held = false
        }
        queue.resume()
    }

    // MARK: DurableStoreWriter

    public var health: StoreHealth { control.withLock { $0.writer.health } }
    public var isOpen: Bool { control.withLock { !$0.writer.closed } }
    public var queueDepth: Int { control.withLock { $0.writer.queued } }
    public var statistics: StoreWriterStatistics { control.withLock { $0.writer.statistics } }

    /// Commits what is queued (waits for it), then refuses later writes. On the writer's own
    /// queue (the last owner released in a completion) it cannot wait for itself: it only refuses.
    public func close() {
        control.withLock { $0.writer.close() }
        guard DispatchQueue.getSpecific(key: Self.queueKey) != ObjectIdentifier(queue) else { return }
        queue.sync {}
    }

    /// Marks each writer's queue, so ``close()`` knows when it runs on it.
    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    // MARK: Writes

    public func submit(_ batch: WriteBatch, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        enqueue({ tables throws(StoreError) in
            for operation in batch.operations { try tables.channelTables.apply(operation) }
        }, completion: completion)
    }

    public func createChannel(_ record: ChannelRecord, completion: @escaping @Sendable (Result<ChannelCreation, StoreError>) -> Void) {
        enqueue({ tables throws(StoreError) in
            let inserted = try tables.channelTables.insert(record)
            return ChannelCreation(record: tables.channelTables.channels[record.id] ?? record, inserted: inserted)
        }, completion: completion)
    }

    public func submit(summarizing operations: [TokenOperation],
                       completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        enqueue({ tables throws(StoreError) in
            var deactivated = 0
            for operation in operations { deactivated += try tables.apply(operation) }
            return TokenWriteSummary(tokensDeactivated: deactivated)
        }, completion: completion)
    }

    /// Queues one batch: `apply` runs on a copy of the tables on the writer's queue.
    private func enqueue<T: Sendable>(_ apply: @escaping @Sendable (inout InMemoryTables) throws(StoreError) -> T,
                                      completion: @escaping @Sendable (Result<T, StoreError>) -> Void) {
        guard control.withLock({ $0.writer.admit() }) else { return queue.async { completion(.failure(.closed)) } }
        queue.async { [self] in
            let failure = control.withLock { c -> StoreError? in
                c.writer.started()
                return c.failure
            }
            let result: Result<T, StoreError>
            if let failure {
                result = .failure(failure)
            } else {
                result = committed.tables.withLock { tables in
                    var copy = tables
                    do throws(StoreError) {
                        let value = try apply(&copy)
                        tables = copy
                        return .success(value)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            let now = clock.now()
            control.withLock { $0.writer.record(result, at: now) }
            completion(result)
        }
    }
}
