import Dispatch
import Foundation
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A gateway's part of the partitioned token registry (docs/cluster.md, "The partitioned token
/// registry"): the registry partitions it owns (``RegistryPartition``), taken up and let go with
/// their leases, and the way any list of registry operations reaches the partitions it concerns.
///
/// - **Writes**: a list is cut by partition (``RegistryEntry/partitioned(_:by:)``); each part
///   goes to its partition here when this gateway owns it, else over request-reply to the
///   owner's subject (``RegistryLogLayout/partitionRequestSubject(_:)``, one queue group of the
///   owners, as channel requests are handed over). The list is done once every part is logged
///   and applied by its owner; the summary adds theirs. A part that fails fails the list; the
///   parts that were logged stay, and the list repeated has the same outcome (every registry
///   operation is idempotent), so the caller's retry loses nothing.
/// - **Serving**: the owner of a partition answers the requests for it while it owns it; a
///   request for a partition it is still taking over, or no longer owns, is answered "moving",
///   which the asking gateway reports as a failure to retry.
/// - **Replacements**: a partition whose directory took a user's note may have decided to
///   replace tokens of other partitions (``UserDirectoryRows``); soon after, its owner logs
///   those replacements to their partitions like any list, and forgets them once logged. Only
///   while it still holds the partition: a deposed owner leaves them to the next, whose file has
///   them too (they are in the partition's log and snapshots). Logged twice, a replacement
///   changes nothing more.
///
/// Confined to `loop` (completions run there); ``takeUp(_:under:)`` and ``letGo(_:)`` block.
public final class PartitionedRegistry: @unchecked Sendable {
    /// How long a part handed to another gateway waits for its answer: past a lease's time, so
    /// a part handed to an owner that froze is answered by the takeover's abandon first.
    public static let requestTimeout: Duration = .seconds(10)

    public let layout: RegistryLogLayout
    public let partitioning: TokenPartitioning
    private let jetStream: any JetStreamClient
    private let connection: any MessagingClient
    private let directory: String
    private let fences: PartitionFences?
    private let snapshots: SnapshotSchedule.Settings
    private let loop: EventLoop
    /// The owned partitions log their snapshots one at a time (``SnapshotTurns``).
    private let snapshotTurns: SnapshotTurns
    /// Take-ups read their partitions a few at a time (``TakeUpSlots``).
    public let takeUpSlots: TakeUpSlots
    /// Take-ups reading at once by default: both CPUs kept busy restoring, a few megabytes at
    /// most in flight ahead of the lease renewals.
    public static let takeUpsAtOnce = 4
    /// How long the file of a partition let go is kept: a lease lost and regained within it
    /// (a gateway overloaded or paused past its lease) reads on from where its file is, instead
    /// of the whole partition again, which would load it further.
    public let keptFileLifetime: Duration
    /// The CPU priority of the partition files' writers (the personal queue's: registrations
    /// never take the CPU from the leases, the channels and their pushes).
    private let niceness: Int32

    private struct Owned {
        let partition: RegistryPartition
        let subscription: any MessageSubscription
        let fence: Fence
    }

    /// How soon after a note the replacements it decided are logged.
    static let drainDelay: Duration = .milliseconds(50)
    /// Replacements logged at once, per partition.
    static let drainBatch = 1_000

    // Confined to `loop`.
    private var owned: [Int: Owned] = [:]
    private var requests: NATSRequests?
    /// Owned partitions whose directory may hold replacements not logged yet.
    private var toDrain: Set<Int> = []
    private var draining: Set<Int> = []
    private var drainTimer: LoopTimer?
    /// Files of partitions not owned here, each until when it is kept (``keptFileLifetime``).
    private var keptFiles: [Int: ContinuousClock.Instant] = [:]
    private var keptFilesTimer: LoopTimer?

    /// `directory`: where the owned partitions' files are kept; files found there (an earlier
    /// run's) are kept for `keptFileLifetime` like those of partitions let go. `fences`: the
    /// gateway's leases (nil: every partition taken up is written, tools and tests).
    public init(jetStream: any JetStreamClient, connection: any MessagingClient, layout: RegistryLogLayout, partitioning: TokenPartitioning,
                directory: String, fences: PartitionFences?, snapshots: SnapshotSchedule.Settings = RegistryPartition.snapshotSchedule,
                keptFileLifetime: Duration = .seconds(600), niceness: Int32 = 0, takeUpsAtOnce: Int = PartitionedRegistry.takeUpsAtOnce,
                loop: EventLoop) {
        self.jetStream = jetStream
        self.connection = connection
        self.layout = layout
        self.partitioning = partitioning
        self.directory = directory
        self.fences = fences
        self.snapshots = snapshots
        self.keptFileLifetime = keptFileLifetime
        self.niceness = niceness
        self.loop = loop
        snapshotTurns = SnapshotTurns(loop: loop)
        takeUpSlots = TakeUpSlots(takeUpsAtOnce)
        let found = (0..<partitioning.count).filter { FileManager.default.fileExists(atPath: RegistryPartition.path(of: $0, in: directory)) }
        loop.execute { [self] in found.forEach(keepFile) }
    }

    /// The partitions this gateway serves now (on the loop).
    public var ownedPartitions: [Int] { owned.keys.sorted() }

    /// The file of `partition` while it is owned here, from any thread: what the readers of the
    /// slices run here open (``OwnedPartitionsReader``).
    public func path(of partition: Int) -> String? { ownedPaths.withLock { $0[partition] } }
    /// The partitions served here now, from any thread (readiness, metrics).
    public var servedPartitions: [Int] { ownedPaths.withLock { $0.keys.sorted() } }
    private let ownedPaths = Mutex<[Int: String]>([:])
    /// Told (on the loop) when an owned partition's file could not apply an entry its log holds:
    /// the partition writes nothing more until it is taken up again under `fence`, which reads
    /// the log into its file from where it stopped (the gateway queues that take-up).
    public var partitionFellBehind: (@Sendable (_ partition: Int, _ fence: Fence) -> Void)?

    /// What every take-up here read, and how long it took, added, from any thread (metrics).
    public var takeoverFigures: RegistryTakeoverFigures { takeoverTotals.withLock { $0 } }
    private let takeoverTotals = Mutex(RegistryTakeoverFigures())

    // MARK: Ownership

    /// Takes `partition` over under `fence` (its log read to the end, the takeover record
    /// written) and serves the requests for it; answers the log sequence its file held before
    /// (0: a new file, read from the log's start or its newest snapshot). Blocking: call it from
    /// a thread of its own.
    @discardableResult
    public func takeUp(_ partition: Int, under fence: Fence) throws -> UInt64 {
        guard !isClosed.load(ordering: .acquiring) else { throw StoreError.closed }
        // Taken up again (its log moved on unseen): the file is read on from where it is.
        let earlier = try loop.sync { [self] in
            ownedPaths.withLock { $0[partition] = nil }
            keptFiles[partition] = nil
            return owned.removeValue(forKey: partition)
        }
        earlier?.subscription.cancel()
        earlier?.partition.close(deletingFile: false)
        let taken = try takeUpSlots.whileHeld {
            try RegistryPartition.takeOver(partition: partition, under: fence, fences: fences, jetStream: jetStream, layout: layout,
                                           directory: directory, snapshots: snapshots, niceness: niceness, turns: snapshotTurns, loop: loop)
        }
        takeoverTotals.withLock { $0 = $0 + taken.takeoverFigures }
        taken.onFileBehind = { [weak self] partition in self?.partitionFellBehind?(partition, fence) }
        do {
            try loop.sync { [self] in
                let subscription = try connection.subscribe(to: layout.partitionRequestSubject(partition), queue: "owners", loop: loop) {
                    [weak self] message in self?.serve(message, partition: partition)
                }
                owned[partition] = Owned(partition: taken, subscription: subscription, fence: fence)
                ownedPaths.withLock { $0[partition] = taken.path }
                // Its directory may hold replacements the earlier owner did not log.
                scheduleDrain(of: partition)
            }
            // Served once the servers know it: a part sent after this returns reaches it.
            try connection.flush(timeout: .seconds(5))
        } catch {
            taken.close(deletingFile: false)
            throw error
        }
        return taken.fileHeldBeforeTakeover
    }

    /// Stops handing `partition`'s file to readers at once, from any thread, before its
    /// ``letGo(_:)`` is queued: a slice started meanwhile waits for the next take-up instead of
    /// reading a file about to be dropped.
    public func withdraw(_ partition: Int) { ownedPaths.withLock { $0[partition] = nil } }

    /// Stops serving `partition`; its file is kept for ``keptFileLifetime`` (dropped at once
    /// when that is zero), then dropped: its next owner restores it from the log. Blocking: never
    /// call it from the loop.
    public func letGo(_ partition: Int) {
        let given = try? loop.sync { [self] () -> RegistryPartition? in
            ownedPaths.withLock { $0[partition] = nil }
            guard let given = owned.removeValue(forKey: partition) else { return nil }
            given.subscription.cancel()
            if keptFileLifetime > .zero { keepFile(partition) }
            return given.partition
        }
        given?.close(deletingFile: keptFileLifetime == .zero)
    }

    /// Keeps `partition`'s file for ``keptFileLifetime`` from now (on the loop).
    private func keepFile(_ partition: Int) {
        keptFiles[partition] = .now + keptFileLifetime
        let timer = keptFilesTimer ?? LoopTimer(loop: loop) { [weak self] in self?.dropExpiredFiles() }
        keptFilesTimer = timer
        if !timer.isScheduled { timer.schedule(after: keptFileLifetime) }
    }

    /// Drops the kept files whose time is up (those of partitions taken up again meanwhile are
    /// not kept any more); on the loop, so a take-up never opens a file being dropped.
    private func dropExpiredFiles() {
        let now = ContinuousClock.now
        for (partition, until) in keptFiles where until <= now {
            keptFiles[partition] = nil
            let path = RegistryPartition.path(of: partition, in: directory)
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        if let next = keptFiles.values.min() { keptFilesTimer?.schedule(after: max(.milliseconds(1), next - now)) }
    }

    /// Set by ``close()``: later take-ups are refused with ``StoreError/closed``.
    private let isClosed = Atomic(false)

    /// Stops serving every partition, keeping their files (the gateway stops); later take-ups
    /// are refused. Blocking.
    public func close() {
        isClosed.store(true, ordering: .releasing)
        let all = (try? loop.sync { [self] () -> [RegistryPartition] in
            let all = owned.values.map(\.partition)
            owned.values.forEach { $0.subscription.cancel() }
            owned = [:]
            ownedPaths.withLock { $0 = [:] }
            return all
        }) ?? []
        all.forEach { $0.close(deletingFile: false) }
    }

    // MARK: Writes

    /// Logs the registry operations of `operations` to their partitions, wherever they are owned.
    public func log(_ operations: [TokenOperation], completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        let entries = RegistryEntry.partitioned(operations, by: partitioning)
        loop.execute { [self] in
            Self.gather(entries.sorted(by: { $0.key < $1.key }), { part, done in write(part.value, to: part.key, completion: done) }) { summaries in
                completion(summaries.map { TokenWriteSummary(tokensDeactivated: $0.map(\.tokensDeactivated).reduce(0, +)) })
            }
        }
    }

    /// Starts `start` for every one of `parts` and answers once each has: every result, or the first failure.
    private static func gather<Part, Answer: Sendable>(_ parts: [Part],
                                                       _ start: (Part, @escaping @Sendable (Result<Answer, StoreError>) -> Void) -> Void,
                                                       completion: @escaping @Sendable (Result<[Answer], StoreError>) -> Void) {
        guard !parts.isEmpty else { return completion(.success([])) }
        let gathered = Mutex((remaining: parts.count, answers: [Answer](), failure: StoreError?.none))
        for part in parts {
            start(part) { result in
                let done = gathered.withLock { state -> Result<[Answer], StoreError>? in
                    switch result {
                    case .success(let answer): state.answers.append(answer)
                    case .failure(let error): if state.failure == nil { state.failure = error }
                    }
                    state.remaining -= 1
                    guard state.remaining == 0 else { return nil }
                    return state.failure.map { .failure($0) } ?? .success(state.answers)
                }
                if let done { completion(done) }
            }
        }
    }

    /// One partition's part: here when owned, else at its owner (on the loop).
    private func write(_ entry: RegistryEntry, to partition: Int, completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        if let local = owned[partition] {
            return local.partition.write(entry.operations) { [self] result in
                loop.execute { [self] in
                    if case .success = result, Self.holdsNotes(entry.operations) { scheduleDrain(of: partition) }
                    completion(result)
                }
            }
        }
        ask(.write(entry), of: partition) { answer in
            switch answer {
            case .success(.written(let summary)): completion(.success(summary))
            case .success(let other): completion(.failure(other.error(partition: partition) ?? Self.unexpected(other, partition: partition)))
            case .failure(let error): completion(.failure(error))
            }
        }
    }

    /// Sends `request` to `partition`'s owner (on the loop); the answer comes on the loop.
    private func ask(_ request: RegistryPartitionRequest, of partition: Int,
                     answer: @escaping @Sendable (Result<RegistryPartitionAnswer, StoreError>) -> Void) {
        if requests == nil { requests = try? NATSRequests(connection: connection, loop: loop) }
        guard let requests else {
            return answer(.failure(.storageFailure("registry partition \(partition) is another gateway's, and the cluster connection cannot take requests now; retry")))
        }
        requests.request(request.encoded, to: layout.partitionRequestSubject(partition), timeout: Self.requestTimeout) { reply in
            switch reply {
            case .success(let message):
                do { answer(.success(try RegistryPartitionAnswer(decoding: message.payload))) } catch {
                    answer(.failure(.storageFailure("registry partition \(partition)'s owner answered unreadably: \(error)")))
                }
            case .failure(.noResponders):
                answer(.failure(.storageFailure("no gateway serves registry partition \(partition) now (it is being taken over); retry")))
            case .failure(let failure):
                answer(.failure(.storageFailure("registry partition \(partition)'s owner did not answer: \(failure)")))
            }
        }
    }

    private static func unexpected(_ answer: RegistryPartitionAnswer, partition: Int) -> StoreError {
        .storageFailure("registry partition \(partition)'s owner answered another question: \(answer)")
    }

    /// Serves a request handed over for `partition` (on the loop).
    private func serve(_ message: NATSMessage, partition: Int) {
        guard let reply = message.reply else { return }
        let connection = connection
        let answer: @Sendable (RegistryPartitionAnswer) -> Void = { answer in try? connection.publish(answer.encoded, to: reply, reply: nil) }
        guard let local = owned[partition] else {
            return answer(.failed("registry partition \(partition) is moving to another gateway; retry"))
        }
        let request: RegistryPartitionRequest
        do { request = try RegistryPartitionRequest(decoding: message.payload) } catch {
            return answer(.refused("a gateway handed over an unreadable registry request: \(error)"))
        }
        switch request {
        case .write(let entry):
            guard entry.operations.allSatisfy({ RegistryEntry.home(of: $0, by: partitioning) == partition }) else {
                return answer(.refused("a gateway handed registry partition \(partition) operations of another partition"))
            }
            local.partition.write(entry.operations) { [self] result in
                answer(RegistryPartitionAnswer(result))
                if case .success = result, Self.holdsNotes(entry.operations) { loop.execute { [self] in scheduleDrain(of: partition) } }
            }
        case .lookUp(let tokens):
            switch Self.read(local.partition.path, { reader throws(StoreError) in try Self.records(of: tokens, in: reader) }) {
            case .success(let records): answer(.records(records))
            case .failure(let error): answer(RegistryPartitionAnswer(error))
            }
        case .directory(let userID, let app, let limit):
            switch Self.read(local.partition.path, { reader throws(StoreError) in try reader.directoryTokens(userID: userID, app: app, limit: limit) }) {
            case .success(let tokens): answer(.tokens(tokens))
            case .failure(let error): answer(RegistryPartitionAnswer(error))
            }
        }
    }

    // MARK: Reads

    /// The records of those of `tokens` that are registered, from their partitions wherever they
    /// are owned, in token order.
    public func lookUp(_ tokens: [String], completion: @escaping @Sendable (Result<[TokenRecord], StoreError>) -> Void) {
        let byPartition = Dictionary(grouping: Set(tokens.map { $0.lowercased() }), by: partitioning.partition(ofToken:))
        loop.execute { [self] in
            Self.gather(Array(byPartition), { part, done in lookUp(part.value.sorted(), in: part.key, completion: done) }) { found in
                completion(found.map { $0.joined().sorted { $0.token < $1.token } })
            }
        }
    }

    /// Up to `limit` of `userID`'s tokens of `app`, active and deactivated, the newest
    /// registration first (ties in token order), as the whole registry's
    /// ``TokenRegistryReader/tokens(userID:app:limit:)``: the user's partition lists them, their
    /// own partitions hold them (a token registered since to another user or app is left out).
    public func tokens(userID: String, app: String, limit: Int, completion: @escaping @Sendable (Result<[TokenRecord], StoreError>) -> Void) {
        let partition = partitioning.partition(ofUser: userID)
        // The directory holds a token once per group: more rows than tokens are asked for, so that
        // `limit` records remain once the ones moved on are left out.
        let listed: @Sendable (Result<[String], StoreError>) -> Void = { [self] listed in
            switch listed {
            case .failure(let error): completion(.failure(error))
            case .success(let tokens):
                lookUp(tokens) { found in
                    completion(found.map { records in
                        Array(records.filter { $0.userID == userID && $0.app == app }
                            .sorted { ($0.registeredAt, $1.token) > ($1.registeredAt, $0.token) }.prefix(limit))
                    })
                }
            }
        }
        loop.execute { [self] in
            if let local = owned[partition] {
                return listed(Self.read(local.partition.path) { reader throws(StoreError) in
                    try reader.directoryTokens(userID: userID, app: app, limit: limit)
                })
            }
            ask(.directory(userID: userID, app: app, limit: limit), of: partition) { answer in
                switch answer {
                case .success(.tokens(let tokens)): listed(.success(tokens))
                case .success(let other): listed(.failure(other.error(partition: partition) ?? Self.unexpected(other, partition: partition)))
                case .failure(let error): listed(.failure(error))
                }
            }
        }
    }

    /// `tokens` (all of `partition`) read here when owned, else at the owner (on the loop).
    private func lookUp(_ tokens: [String], in partition: Int, completion: @escaping @Sendable (Result<[TokenRecord], StoreError>) -> Void) {
        if let local = owned[partition] {
            return completion(Self.read(local.partition.path) { reader throws(StoreError) in try Self.records(of: tokens, in: reader) })
        }
        ask(.lookUp(tokens), of: partition) { answer in
            switch answer {
            case .success(.records(let records)): completion(.success(records))
            case .success(let other): completion(.failure(other.error(partition: partition) ?? Self.unexpected(other, partition: partition)))
            case .failure(let error): completion(.failure(error))
            }
        }
    }

    private static func records(of tokens: [String], in reader: SQLiteTokenReader) throws(StoreError) -> [TokenRecord] {
        var records: [TokenRecord] = []
        for token in tokens { if let record = try reader.token(token) { records.append(record) } }
        return records
    }

    /// Reads a partition's file through a connection of its own, on the calling thread (a few
    /// keys: a lookup's tokens, a user's directory).
    private static func read<T>(_ path: String, _ body: (SQLiteTokenReader) throws(StoreError) -> T) -> Result<T, StoreError> {
        do {
            let reader = try SQLiteTokenReader(path: path)
            defer { reader.close() }
            return .success(try body(reader))
        } catch {
            return .failure(error)
        }
    }

    // MARK: Replacements

    private static func holdsNotes(_ operations: [TokenOperation]) -> Bool {
        operations.contains { if case .noteUserToken = $0 { true } else { false } }
    }

    /// Logs `partition`'s pending replacements soon (on the loop).
    private func scheduleDrain(of partition: Int, after delay: Duration = drainDelay) {
        toDrain.insert(partition)
        let timer = drainTimer ?? LoopTimer(loop: loop) { [weak self] in self?.drain() }
        drainTimer = timer
        if !timer.isScheduled { timer.schedule(after: delay) }
    }

    /// Logs a batch of each marked partition's replacements to their partitions, while the
    /// partition is still held, and forgets them once logged; a partition with more, or whose
    /// batch failed, is marked again.
    private func drain() {
        let partitions = toDrain.subtracting(draining)
        toDrain.subtract(partitions)
        for partition in partitions {
            guard let local = owned[partition] else { continue }
            draining.insert(partition)
            let file = local.partition.file
            file.pendingSupersessions(limit: Self.drainBatch) { [self] read in
                loop.execute { [self] in
                    guard case .success(let pending) = read else { return drained(partition, again: true) }
                    guard !pending.isEmpty else { return drained(partition, again: false) }
                    guard owned[partition]?.fence == local.fence, fences.map({ $0.holds(local.fence, of: partition) }) ?? true else {
                        return drained(partition, again: false)
                    }
                    log(pending) { [self] logged in
                        guard case .success = logged else { return loop.execute { [self] in drained(partition, again: true) } }
                        file.forgetSupersessions(pending) { [self] _ in
                            loop.execute { [self] in drained(partition, again: pending.count == Self.drainBatch) }
                        }
                    }
                }
            }
        }
    }

    private func drained(_ partition: Int, again: Bool) {
        draining.remove(partition)
        if again, owned[partition] != nil {
            scheduleDrain(of: partition, after: .seconds(1))
        } else if toDrain.contains(partition) {
            scheduleDrain(of: partition)
        }
    }
}
