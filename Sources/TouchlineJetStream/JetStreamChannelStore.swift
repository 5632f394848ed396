import Dispatch
import Glibc
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// ``ChannelStoreWriter`` on a JetStream log: each batch is checked against the tables, logged
/// as one message to its partition's subject (``ChannelLogLayout``) and applied to the tables
/// once the cluster has acknowledged it. The tables are rebuilt from the log when the store is
/// opened, so whatever one gateway committed, the next owner of the partition restores.
///
/// - **Durability**: a completion reports success only after the acknowledgement, i.e. once a
///   quorum of the stream's replicas stored the batch (docs/cluster.md, "What acknowledged
///   means").
/// - **Fencing**: every publish expects the log stream's last sequence to be the one this store
///   applied last. A gateway that lost its partition to another gets "wrong last sequence" and
///   fails the batch: two gateways never interleave one partition's log. (The condition is the
///   stream's, not the subject's: only the stream's holds against a write still in flight on a
///   replicated stream, docs/cluster.md.)
/// - **A lost acknowledgement is not a failure**: the publish is repeated with the same message
///   id. If the first attempt was stored, the repeat is refused for its expected sequence (or, on
///   a server that checks the id first, answered as a duplicate), and the log's message at the
///   expected place is read: it carries the write's id. Only after ``retryLimit`` does the batch
///   fail.
/// - **Order**: one batch per partition log is in flight at a time, so a partition's batches (and
///   so each channel's) commit and complete in submission order, while partitions write side by
///   side (``PartitionWriteQueue``). A batch that checks or changes what partitions share (an
///   APNs channel id, unique across channels) goes alone.
///
/// - **Snapshots**: once a partition's log has grown by as much as its state
///   (``SnapshotSchedule``), the store logs a snapshot of the partition's channels to it, fenced
///   like a batch, and trims the messages before it; replay starts from the snapshot
///   (`JetStreamChannelStore+Snapshots.swift`).
///
/// Completions run on the store's loop. Reads (``openReader()``) see the acknowledged tables.
public final class JetStreamChannelStore: ChannelStoreWriter, @unchecked Sendable {
    /// How long a batch whose publish got no answer is tried again (same message id) before it fails.
    public static let retryLimit: Duration = .seconds(10)
    /// A replay that delivers nothing for this long is given up.
    static let replayStall: Duration = .seconds(5)

    public let layout: ChannelLogLayout
    let jetStream: any JetStreamClient
    let loop: EventLoop
    private let clock: any WallClock
    /// The tables as the acknowledged batches left them, shared with the readers.
    let committed = CommittedTables()
    private let control = Mutex(WriterState())
    /// Unique per opened store: the prefix of its message ids.
    private let writerID: String

    /// A write waiting for its turn: a caller's (told when it is done), or a snapshot the store
    /// decided on.
    enum QueuedWork {
        case caller((_ done: @escaping @Sendable () -> Void) -> Void)
        case snapshot(partition: Int)
        case takeover(partition: Int, fence: Fence, completion: @Sendable (Result<Void, StoreError>) -> Void)
        case release(partition: Int)
    }

    // Confined to `loop`.
    private var queue = PartitionWriteQueue<QueuedWork>()
    /// ``startNext()`` is running: a write finishing meanwhile asks it to look again.
    private var scheduling = false
    private var rescan = false
    var lastSequence: [ChannelLogLayout.Log: UInt64] = [:]
    var written: UInt64 = 0
    var schedule: SnapshotSchedule
    var snapshotQueued: Set<Int> = []
    /// JetStream API requests sent from the loop (trimming a log, reading a message back), made
    /// on first use (``apiRequests``).
    private var requests: NATSRequests?
    let snapshotCounts = Mutex(SnapshotStatistics())
    private var closeWaiters: [DispatchSemaphore] = []
    /// Per log: its appender, which repeats the publish of its write in flight that got no answer.
    private var appenders: [ChannelLogLayout.Log: LogAppender] = [:]
    /// Partition logs this store may no longer see to their end: a write was refused because the
    /// log had moved on, or got no answer in time (it may be stored after all). Nothing more is
    /// written to such a log until it has been read again (``catchUp(partition:)``).
    var stale: Set<Int> = []
    /// Per log: the recorded events of the batches replayed since its last snapshot, whose
    /// copies ``recopyReplayed(_:)`` checks once the replay is done.
    var replayedRecordings: [ChannelLogLayout.Log: [StoredEvent]] = [:]
    /// Snapshots being read back part by part, per log (on the loop).
    var snapshotReadings: [ChannelLogLayout.Log: SnapshotParts.Reading] = [:]
    private let staleness = Mutex<(@Sendable (Int) -> Void)?>(nil)
    /// The leases this gateway holds, when it writes under them (a cluster gateway): a write to a
    /// partition's log is sent only while the fence it took the partition over with holds. nil:
    /// every log is written (tools, tests of the store alone).
    let fences: PartitionFences?
    /// Per partition, the fence of this store's last takeover record (`+Takeover.swift`).
    var takenOver: [Int: Fence] = [:]
    /// Per partition, how many times its tables were dropped (`+Release.swift`): a replay that
    /// began before a drop stops rather than apply the rest of the log to nothing.
    var releases: [Int: Int] = [:]

    private init(jetStream: any JetStreamClient, layout: ChannelLogLayout, loop: EventLoop, clock: any WallClock, writerID: String,
                 snapshots: SnapshotSchedule.Settings, fences: PartitionFences?) {
        self.schedule = SnapshotSchedule(settings: snapshots)
        self.fences = fences
        self.jetStream = jetStream
        self.layout = layout
        self.loop = loop
        self.clock = clock
        self.writerID = writerID
    }

    /// Creates the log stream if needed and rebuilds the tables of `partitions` (all of them
    /// when nil) and of the global log from it. Blocks until the replay is done: call it from a
    /// starting thread, never from `loop`. Snapshots larger than the servers' `max_payload` are
    /// written in parts, whatever `snapshots` says. With `fences`, partition logs are
    /// written only under a takeover (``takeOver(partition:under:)``) whose fence holds.
    public static func open(jetStream: any JetStreamClient, layout: ChannelLogLayout, replicas: Int, partitions: [Int]? = nil,
                            limits: ChannelLogLayout.SizeLimits = ChannelLogLayout.SizeLimits(),
                            snapshots: SnapshotSchedule.Settings = SnapshotSchedule.Settings(), fences: PartitionFences? = nil,
                            loop: EventLoop, clock: any WallClock = SystemClock()) throws -> JetStreamChannelStore {
        for log in layout.logs {
            try JetStream.retryingWhileForming { () throws(NATSError) in
                try jetStream.ensureBoundedStream(.init(name: layout.streamName(of: log), subjects: [layout.subject(of: log)], replicas: replicas,
                                                        duplicateWindow: .seconds(120), maximumBytes: limits.bytes(of: log)))
            }
        }
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureBoundedStream(.init(name: layout.recordingsStreamName, subjects: layout.recordingsSubjects, replicas: replicas,
                                                    duplicateWindow: .seconds(120), maximumBytes: limits.recordingsBytes))
        }
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureStream(.init(name: layout.probeStreamName, subjects: layout.probeSubjects, replicas: replicas,
                                             maximumAge: .seconds(60), maximumMessagesPerSubject: 1, duplicateWindow: .seconds(10),
                                             maximumBytes: ChannelLogLayout.probeStreamBytes, whenFull: .dropOldest))
        }
        let writerID = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 36) }.joined()
        var snapshots = snapshots
        let payloadLimit = jetStream.messaging.maximumPayload
        if payloadLimit > 0 { snapshots.maximumPartBytes = min(snapshots.maximumPartBytes, payloadLimit - 4_096) }
        let store = JetStreamChannelStore(jetStream: jetStream, layout: layout, loop: loop, clock: clock, writerID: writerID,
                                          snapshots: snapshots, fences: fences)
        let logs = (partitions ?? Array(0..<layout.partitioning.count)).map(ChannelLogLayout.Log.partition) + [.global]
        for log in logs { try store.replayRetrying(log) }
        return store
    }

    /// Told, on the store's loop, when a partition's log turns stale: the gateway reads it again
    /// and reloads its channels from it (`ClusterNode`).
    public func onStalePartition(_ handler: @escaping @Sendable (Int) -> Void) {
        staleness.withLock { $0 = handler }
    }

    // MARK: DurableStoreWriter

    public var health: StoreHealth { control.withLock { $0.health } }
    public var isOpen: Bool { control.withLock { !$0.closed } }
    public var queueDepth: Int { control.withLock { $0.queued } }
    public var statistics: StoreWriterStatistics { control.withLock { $0.statistics } }

    /// Refuses later writes and waits until the queued ones are logged (on the store's loop it
    /// cannot wait for itself: it only refuses).
    public func close() {
        control.withLock { $0.close() }
        guard !loop.inEventLoop else { return }
        let waiter = try? loop.sync { [self] () -> DispatchSemaphore? in
            guard !queue.isIdle else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            closeWaiters.append(semaphore)
            return semaphore
        }
        waiter?.wait()
    }

    /// A reader of the acknowledged tables (any thread; close it when done).
    public func openReader() -> JetStreamChannelStoreReader { JetStreamChannelStoreReader(committed: committed) }

    /// The acknowledged tables, shared by the writer and its readers.
    final class CommittedTables: Sendable {
        let tables = Mutex(ChannelTables())
    }

    // MARK: Writes

    public func submit(_ batch: WriteBatch, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        if batch.operations.contains(where: \.isOutboxPrune) { return prune(batch, completion: completion) }
        // A batch of two partitions is refused when performed; until then it waits alone.
        let log = try? layout.log(of: batch)
        enqueue(log: log ?? .global, exclusive: log == nil || Self.touchesWhatPartitionsShare(batch), scope: ChannelScope(batch.operations), { tables throws(StoreError) in
            for operation in batch.operations { try tables.apply(operation) }
            return (batch, ())
        }, completion: completion)
    }

    public func createChannel(_ record: ChannelRecord, completion: @escaping @Sendable (Result<ChannelCreation, StoreError>) -> Void) {
        enqueue(log: .partition(layout.partitioning.partition(of: record.id)), exclusive: record.apnsChannelID != nil,
                scope: ChannelScope([.createChannel(record)]), { tables throws(StoreError) in
            let inserted = try tables.insert(record)
            let creation = ChannelCreation(record: tables.channels[record.id] ?? record, inserted: inserted)
            return (inserted ? WriteBatch([.createChannel(record)]) : nil, creation)
        }, completion: completion)
    }

    /// Operations that check or change what all partitions share: an APNs channel id is unique
    /// across channels. Their batches are checked and logged while nothing else is in flight, so
    /// no other partition's write can pass the same check at the same time. (Outbox ids are
    /// numbered per log: ``ChannelLogLayout/outboxID(of:sequence:index:)``.)
    static func touchesWhatPartitionsShare(_ batch: WriteBatch) -> Bool {
        batch.operations.contains { operation in
            switch operation {
            case .channelCreated: true
            case .createChannel(let record): record.apnsChannelID != nil
            case .updateState, .markStatus, .deleteChannel, .appendEvents, .recordEvents, .truncateEvents, .webhook: false
            }
        }
    }

    /// Drops old webhook events from this store's tables, without logging anything: pruning is
    /// each gateway's own housekeeping (it prunes what it holds, on its own clock), and a
    /// partition's log forgets pruned events when it is trimmed below a snapshot, which holds
    /// the outbox as pruned (docs/cluster.md, "Webhooks on the cluster"). A batch that mixes a
    /// prune with writes is refused: the gateway never makes one.
    private func prune(_ batch: WriteBatch, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        guard batch.operations.allSatisfy(\.isOutboxPrune) else {
            return completion(.failure(.refused("an outbox prune is written on its own on the jetstream backend")))
        }
        let admitted = control.withLock { $0.admit() }
        loop.execute { [self] in
            guard admitted else { return completion(.failure(.closed)) }
            committed.tables.withLock { tables in
                for case .webhook(let prune) in batch.operations { tables.apply(prune) }
            }
            completion(.success(()))
        }
    }

    /// Queues a write to `log`: `apply` checks it on a copy of the rows `scope` names (never
    /// more: a write costs what it touches, however many channels the tables hold) and says
    /// what to log (nil: nothing, the answer stands as it is).
    private func enqueue<T: Sendable>(log: ChannelLogLayout.Log, exclusive: Bool, scope: ChannelScope,
                                      _ apply: @escaping @Sendable (inout ChannelTables) throws(StoreError) -> (WriteBatch?, T),
                                      completion: @escaping @Sendable (Result<T, StoreError>) -> Void) {
        let admitted = control.withLock { $0.admit() }
        loop.execute { [self] in
            guard admitted else { return completion(.failure(.closed)) }
            queue.append(.init(log: log, exclusive: exclusive, work: .caller { [self] done in
                perform(apply, on: scope, done: done, completion: completion)
            }))
            startNext()
        }
    }

    /// Starts every write the queue lets go now.
    func startNext() {
        guard !scheduling else { return rescan = true }
        scheduling = true
        repeat {
            rescan = false
            for write in queue.takeStartable() {
                let (log, exclusive) = (write.log, write.exclusive)
                let done: @Sendable () -> Void = { [self] in
                    queue.finished(log: log, exclusive: exclusive)
                    startNext()
                }
                switch write.work {
                case .caller(let perform):
                    control.withLock { $0.started() }
                    perform(done)
                case .snapshot(let partition):
                    writeSnapshot(of: partition, done: done)
                case .takeover(let partition, let fence, let completion):
                    writeTakeover(of: partition, under: fence, done: done, completion: completion)
                case .release(let partition):
                    dropTables(of: partition)
                    done()
                }
            }
        } while rescan
        scheduling = false
        if queue.isIdle {
            closeWaiters.forEach { $0.signal() }
            closeWaiters = []
        }
    }

    /// Queues `partition`'s takeover record behind the writes already waiting, and starts what may start.
    func queueTakeover(of partition: Int, under fence: Fence, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        queue.append(.init(log: .partition(partition), work: .takeover(partition: partition, fence: fence, completion: completion)))
        startNext()
    }

    /// Queues dropping `partition`'s tables behind the writes already waiting, and starts what may start.
    func queueRelease(of partition: Int) {
        queue.append(.init(log: .partition(partition), work: .release(partition: partition)))
        startNext()
    }

    /// Queues a snapshot of `partition` behind the writes already waiting (once).
    func queueSnapshot(of partition: Int) {
        guard snapshotQueued.insert(partition).inserted else { return }
        queue.append(.init(log: .partition(partition), work: .snapshot(partition: partition)))
    }

    private func perform<T: Sendable>(_ apply: (inout ChannelTables) throws(StoreError) -> (WriteBatch?, T), on scope: ChannelScope,
                                      done: @escaping @Sendable () -> Void, completion: @escaping @Sendable (Result<T, StoreError>) -> Void) {
        var checked = committed.tables.withLock { $0.scoped(to: scope) }
        let batch: WriteBatch?
        let answer: T
        let log: ChannelLogLayout.Log
        do throws(StoreError) {
            (batch, answer) = try apply(&checked)
            log = try batch.map { batch throws(StoreError) in try layout.log(of: batch) } ?? .global
        } catch {
            return finish(.failure(error), completion: completion, done: done)
        }
        guard let batch, !batch.isEmpty else { return finish(.success(answer), completion: completion, done: done) }
        if case .partition(let partition) = log, stale.contains(partition) {
            return finish(.failure(.storageFailure("\(log) is being read again: a write to it was refused or got no answer; retry shortly")),
                          completion: completion, done: done)
        }
        guard batch.operations.count(where: \.isOutboxRecord) <= ChannelLogLayout.recordsPerBatch else {
            return finish(.failure(.refused("a batch records more than \(ChannelLogLayout.recordsPerBatch) webhook events")),
                          completion: completion, done: done)
        }
        let bytes = batch.binaryEncoded
        publish(bytes, to: log, id: nextMessageID(), since: ContinuousClock.now, fence: ownFence(of: log)) { [self] result in
            switch result {
            case .success(let sequence):
                lastSequence[log] = sequence
                if case .partition(let partition) = log {
                    schedule.logged(bytes.count, to: partition)
                    if schedule.isDue(partition) { queueSnapshot(of: partition) }
                }
                // Applied to the tables as they are now, not to the copy it was checked on: a
                // partition taken up meanwhile may have been read into them. The batch concerns
                // only its own partition, which nothing else changes, so it applies as checked.
                // In place: nothing shares the tables' storage, so nothing is copied, and a batch
                // that no longer applies stops the process rather than leave it half applied.
                let layout = layout
                committed.tables.withLock { current in
                    do throws(StoreError) {
                        try current.apply(Self.forTables(batch)) { index in layout.outboxID(of: log, sequence: sequence, index: index) }
                    } catch {
                        preconditionFailure("a logged batch no longer applies to the tables it was checked against: \(error)")
                    }
                }
                forgetRecordings(of: batch)
                // The batch is logged; it is done once its recorded events are copied (docs/cluster.md).
                record(Self.recordedEvents(of: batch), since: .now) { [self] copied in
                    if case .failure(let error) = copied {
                        // Read again before any other write: the replay copies what is missing.
                        markStale(log)
                        return finish(.failure(error), completion: completion, done: done)
                    }
                    finish(.success(answer), completion: completion, done: done)
                }
            case .failure(let error):
                finish(.failure(error), completion: completion, done: done)
            }
        }
    }

    /// The log may hold what this store has not read (another writer's batch, or its own whose
    /// answer was lost): no more writes to it until it has been read again.
    func markStale(_ log: ChannelLogLayout.Log) {
        guard case .partition(let partition) = log, stale.insert(partition).inserted else { return }
        staleness.withLock { $0 }?(partition)
    }

    /// A message id no other write of any store uses.
    func nextMessageID() -> String {
        written += 1
        return "\(writerID):\(written)"
    }

    /// Logs `bytes` to `log` after the last message this store applied (``LogAppender``: the
    /// same message repeated after a lost answer until ``retryLimit`` has passed since `since`).
    /// Each attempt is sent only while `fence` (the takeover's, for a partition log) holds; a
    /// log that may hold what this store has not read is marked stale.
    func publish(_ bytes: [UInt8], to log: ChannelLogLayout.Log, headers: [String: String] = [:], id: String,
                 since: ContinuousClock.Instant, fence: Fence? = nil,
                 then done: @escaping @Sendable (Result<UInt64, StoreError>) -> Void) {
        appender(of: log).append(bytes, headers: headers, expected: lastSequence[log] ?? 0, id: id, since: since,
                                 refusal: { [self] in fenceRefusal(writing: log, under: fence) }) { [self] result in
            if case .failure(let failure) = result, failure.logMayHaveMoved { markStale(log) }
            done(result.mapError(\.error))
        }
    }

    /// `log`'s appender, made on first use (on the loop).
    private func appender(of log: ChannelLogLayout.Log) -> LogAppender {
        if let appender = appenders[log] { return appender }
        let appender = LogAppender(stream: layout.streamName(of: log), subject: layout.subject(of: log), logName: "\(log)", writeName: "the batch",
                                   jetStream: jetStream, loop: loop, retryLimit: Self.retryLimit) { [weak self] in self?.apiRequests }
        appenders[log] = appender
        return appender
    }

    /// ``requests``, made on first use (on the loop). nil when the connection cannot take the
    /// subscription for answers now (it is closed or lost): each caller has its way of failing.
    var apiRequests: NATSRequests? {
        if requests == nil { requests = try? NATSRequests(connection: jetStream.messaging, loop: loop) }
        return requests
    }

    /// A full log fails its own writes only: the store's health, which gates every write of
    /// the gateway, is left as it is, unless a probe write fails too (the servers are out of
    /// storage, not only this log). The write is answered once the health is settled.
    private func finish<T>(_ result: Result<T, StoreError>, completion: @escaping @Sendable (Result<T, StoreError>) -> Void,
                           done: @escaping @Sendable () -> Void) {
        if case .failure(let error) = result, error.isFull {
            control.withLock { $0.statistics.failedBatches += 1 }
            return probeAfterFullLog(error) { [self] in answer(Result<T, StoreError>.failure(error), completion: completion, done: done) }
        }
        control.withLock { $0.record(result, at: clock.now()) }
        answer(result, completion: completion, done: done)
    }

    private func answer<T>(_ result: Result<T, StoreError>, completion: @Sendable (Result<T, StoreError>) -> Void, done: @Sendable () -> Void) {
        completion(result)
        done()
        if health.isFailing { scheduleProbe() }
    }

    // MARK: Probe

    private var probeTimer: LoopTimer?

    /// After a write refused by its full log: a write to the probe stream (which drops its
    /// oldest when full) tells a full log from servers out of storage; only the latter makes
    /// the store's health failing, with the log's refusal as the reason.
    private func probeAfterFullLog(_ refusal: StoreError, then settled: @escaping @Sendable () -> Void) {
        jetStream.publish([], to: layout.probeSubject(writer: writerID), loop: loop) { [self] result in
            if case .failure = result {
                let failure = StoreError.storageFailure("\(refusal), and the servers refuse other writes too")
                control.withLock { $0.record(Result<Void, StoreError>.failure(failure), at: clock.now()) }
            }
            settled()
        }
    }

    /// While failing, the store tries a write of its own every second (to the probe stream, which
    /// no replay reads), so its health turns back by itself once the cluster takes writes again,
    /// as the SQLite store's probe does.
    private func scheduleProbe() {
        guard probeTimer == nil else { return }
        let timer = LoopTimer(loop: loop) { [self] in
            probeTimer = nil
            control.withLock { $0.statistics.probes += 1 }
            jetStream.publish([], to: layout.probeSubject(writer: writerID), loop: loop) { [self] result in
                if case .success = result {
                    control.withLock { $0.health = .healthy }
                } else if health.isFailing {
                    scheduleProbe()
                }
            }
        }
        probeTimer = timer
        timer.schedule(after: .seconds(1))
    }

    // MARK: Replay

    /// Applies what was logged to `partition` since this store last read it (all of its log the
    /// first time): a gateway that takes a partition over reads what its previous owner wrote.
    /// Blocks until done: call it from a thread of its own, never from the store's loop.
    public func catchUp(partition: Int) throws {
        try replay(.partition(partition))
    }

    /// ``replay(_:)``, tried again for up to 15 s while it fails the way a cluster electing a
    /// leader makes it fail (a stream that does not answer, a replay that stalls).
    private func replayRetrying(_ log: ChannelLogLayout.Log) throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            do {
                return try replay(log)
            } catch let error as StoreError where error.isStorageFailure && ContinuousClock.now < deadline {
                usleep(250_000)
            }
        }
    }

    /// Applies `log`'s batches, in order, from the first this store has not applied up to the
    /// log's last message at the time of the call; from a snapshot on when the messages before it
    /// were trimmed.
    private func replay(_ log: ChannelLogLayout.Log) throws {
        let subject = layout.subject(of: log)
        let stream = layout.streamName(of: log)
        let (applied, releasesBefore) = try loop.sync { [self] in (lastSequence[log] ?? 0, releases(of: log)) }
        let read = { [self] in if case .partition(let partition) = log { loop.execute { [self] in stale.remove(partition) } } }
        // A stream that is not there (its leader being elected, say) is not an empty log.
        guard let state = try JetStream.retryingWhileForming({ () throws(NATSError) in try jetStream.streamState(stream) }) else {
            throw StoreError.storageFailure("\(log)'s stream \(stream) did not answer as existing")
        }
        let last = state.lastSequence
        guard last > applied else { return read() }
        let caughtUp = DispatchSemaphore(value: 0)
        let failure = Mutex<StoreError?>(nil)
        let delivered = Mutex<Int>(0)
        let subscription = try JetStream.retryingWhileForming { () throws(NATSError) in try jetStream.subscribeOrdered(to: subject, from: .sequence(applied + 1), loop: loop) { [self] message in
            delivered.withLock { $0 += 1 }
            // After the first message that cannot be applied, the rest are not read: the error
            // names that message.
            guard failure.withLock({ $0 == nil }), let sequence = message.stream?.sequence, sequence > (lastSequence[log] ?? 0),
                  sequence <= last else { return }
            do throws(StoreError) {
                guard releases(of: log) == releasesBefore else { throw .storageFailure("\(log) was let go while it was read") }
                try apply(message, at: sequence, of: log)
                lastSequence[log] = sequence
            } catch {
                failure.withLock { $0 = error }
                caughtUp.signal()
                return
            }
            if sequence == last { caughtUp.signal() }
        } }
        defer { subscription.cancel() }
        // However long the log, a replay that stops moving is given up (and tried again with a
        // new consumer by the caller): its consumer's server may have died.
        var seen = 0
        while caughtUp.wait(timeout: .now() + .seconds(Int(Self.replayStall.components.seconds))) == .timedOut {
            let now = delivered.withLock { $0 }
            guard now > seen else {
                throw StoreError.storageFailure("replaying \(log) up to log sequence \(last) delivered nothing for \(Self.replayStall)")
            }
            seen = now
        }
        if let error = failure.withLock({ $0 }) { throw error }
        try recopyReplayed(log)
        read()
    }
}
