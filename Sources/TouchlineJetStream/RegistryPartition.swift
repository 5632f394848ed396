import Dispatch
import Foundation
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// One partition of the partitioned token registry on the gateway that owns it (docs/cluster.md,
/// "The partitioned token registry"): the partition's SQLite file, and its log, which only the
/// partition's owner appends to.
///
/// - **Taken over like a channel partition.** ``takeOver(partition:under:fences:jetStream:layout:directory:loop:)``
///   reads the partition's log after what the file holds, then writes a takeover record by
///   compare-and-set on the log's last sequence. Every write of an earlier owner expects a
///   sequence before the record, so none is stored after it; a write stored between the read
///   and the record makes the record fail, and the log is read again.
/// - **Writes**: each list is logged as one entry by compare-and-set on the last sequence this
///   partition read or wrote (``LogAppender``), sent only while the takeover's fence holds, and
///   applied to the file (``RegistryRules/partition``) once the cluster acknowledged it. The
///   next entry goes as soon as the one before is acknowledged; the file applies them in order.
///   A write refused because the log moved, or whose answer was lost past the retry limit,
///   stops the partition's writes: it is to be taken over again.
/// - **Snapshots**: once the entries logged since the last snapshot weigh as much as it
///   (``SnapshotSchedule``), the file's image (its pages, ``RegistrySnapshot/Layout/fileImage``)
///   is logged in parts to the partition's own stream, then a marker naming them, each by compare-and-set under the fence like an
///   entry, and the stream is trimmed below the first part. A new owner whose file is behind
///   the trim restores the newest snapshot, then reads the entries after it.
/// - **Let go**: ``close(deletingFile:)`` drops the file of a partition this gateway no longer
///   owns; the next owner restores it from the log.
///
/// Confined to `loop`; completions run there.
public final class RegistryPartition: @unchecked Sendable {
    /// How long an entry whose publish got no answer is tried again (same message id).
    public static let retryLimit: Duration = .seconds(10)
    /// How many times a takeover reads the log again because a write slipped in before its record.
    static let takeoverAttempts = 20
    /// A read of the log that delivers nothing for this long is given up.
    static let replayStall: Duration = .seconds(5)
    /// A takeover applies the log's tail in batches of up to this many entries (or
    /// ``replayBatchBytes``), one transaction each: applied one at a time, an entry cost about
    /// eight times a snapshot row per token (each its own savepoint, and transactions too small to
    /// keep the pages they touch cached).
    static let replayBatch = 64
    static let replayBatchBytes = 1 << 20
    /// Entries handed over by the client ahead of what the file applied: two batches, so the
    /// next one is read while one is applied.
    static let replayWindow = 2 * replayBatch
    /// A partition file's write-ahead log is checkpointed past this, and truncated to it: a
    /// gateway holds dozens of partition files, so a whole file's 64 MiB each would outweigh
    /// the partitions themselves (measured: 748 MB of files for 100,000 tokens in 32 partitions).
    static let walLimitBytes = 4 << 20

    /// When a registry partition gets a snapshot: once its log since the last weighs an eighth of
    /// it. A byte of the log's tail costs a new owner about twenty times a byte of a file image
    /// (measured, docs/benchmarks.md: with the log let grow to the image's weight, a takeover
    /// applied 32 MB of tails in 9.1 s after restoring 100 MB of images in 1.3 s; at an eighth,
    /// 4 MB in 1.9 s after 171 MB in 1.4 s). The price is images written more often, so larger
    /// streams while a registry fills (351 MB against 263 MB in the same runs).
    /// And once the log since the last weighs 4 MiB, whatever the share: a tail's random inserts
    /// cost more the larger the file (at 10 million tokens, partition images of about 58 MB, a
    /// byte of the tail cost a new owner about 125 times a byte of the image, and tails of up to
    /// an eighth of that made a replacement miss its 60 s). Past 32 MB of image the cap writes
    /// images more often than the share: about a tenth more image bytes while 10 million fill.
    public static let snapshotSchedule = SnapshotSchedule.Settings(logShareOfSnapshot: 1.0 / 8, maximumLogBytes: 4 << 20)

    public let partition: Int
    /// The partition's file.
    public let path: String
    let file: StoreWriter
    private var appender: LogAppender!
    private let loop: EventLoop
    private let fence: Fence
    private let fences: PartitionFences?
    private let writerID: String
    private let layout: RegistryLogLayout
    private let jetStream: any JetStreamClient

    /// What waits for its turn in the log: an entry (or the takeover record), or a snapshot.
    private enum Work {
        case entry(RegistryEntry, headers: [String: String], completion: @Sendable (Result<TokenWriteSummary, StoreError>) -> Void)
        case snapshot
    }

    // Confined to `loop`.
    /// The log stream's last sequence as this partition knows it: what the next write expects.
    private var lastSequence: UInt64
    /// The sequence of the last entry handed to the file: every entry up to it is in the file
    /// or on its way there, in order.
    private var fileSequence: UInt64
    private var schedule: SnapshotSchedule
    private var written: UInt64 = 0
    private var waiting: [Work] = []
    private var snapshotQueued = false
    /// Turns at logging snapshots, shared with this gateway's other partitions (nil: any time).
    private let turns: SnapshotTurns?
    /// Whether this partition holds the turn: from the grant until its snapshot ends or is dropped.
    private var holdsTurn = false
    private var publishing = false
    /// What snapshots did since the takeover.
    private let snapshotCounts = Mutex(SnapshotStatistics())
    /// Why no more entries are written (the log moved, the partition was let go).
    private var stopped: StoreError?
    private var requests: NATSRequests?

    private init(partition: Int, path: String, file: StoreWriter, jetStream: any JetStreamClient, layout: RegistryLogLayout, loop: EventLoop,
                 fence: Fence, fences: PartitionFences?, read: LogPosition, snapshots: SnapshotSchedule.Settings, turns: SnapshotTurns?,
                figures: RegistryTakeoverFigures) {
        self.turns = turns
        self.partition = partition
        self.layout = layout
        self.jetStream = jetStream
        lastSequence = read.stream
        fileSequence = read.file
        schedule = SnapshotSchedule(settings: snapshots)
        // What the takeover read counts as if written here: a new owner does not write an image
        // again right after restoring one.
        if figures.snapshotBytes > 0 { schedule.snapshotted(figures.snapshotBytes, partition: partition) }
        schedule.logged(figures.tailBytes, to: partition)
        self.path = path
        self.file = file
        self.loop = loop
        self.fence = fence
        self.fences = fences
        writerID = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 36) }.joined()
        appender = LogAppender(stream: layout.partitionStreamName(partition), subject: layout.partitionEntrySubject(partition),
                               logName: "registry partition \(partition)'s log", writeName: "the registry entry", jetStream: jetStream,
                               loop: loop, retryLimit: Self.retryLimit) { [weak self] in self?.apiRequests(jetStream) }
    }

    /// JetStream API requests (reading a message back), made on first use (on the loop).
    private func apiRequests(_ jetStream: any JetStreamClient) -> NATSRequests? {
        if requests == nil { requests = try? NATSRequests(connection: jetStream.messaging, loop: loop) }
        return requests
    }

    /// Creates the logs of `count` partitions if needed (each a stream of its own).
    public static func ensureLogs(count: Int, jetStream: any JetStreamClient, layout: RegistryLogLayout, replicas: Int,
                                  maximumBytes: Int? = nil) throws {
        for partition in 0..<count {
            try JetStream.retryingWhileForming { () throws(NATSError) in
                try jetStream.ensureBoundedStream(.init(name: layout.partitionStreamName(partition), subjects: layout.partitionSubjects(partition),
                                                        replicas: replicas, duplicateWindow: .seconds(120), maximumBytes: maximumBytes))
            }
        }
    }

    /// The file of `partition` under `directory`.
    public static func path(of partition: Int, in directory: String) -> String { "\(directory)/registry-\(partition).sqlite" }

    /// Where the image of the partition file at `path` is written while it is logged.
    static func outgoingImagePath(of path: String) -> String { path + "-image-out" }

    /// Where a snapshot of the partition file at `path` is received while it is taken up.
    static func incomingImagePath(of path: String) -> String { path + "-image-in" }

    /// Where a takeover's read of the log left the partition: the stream's last sequence, and
    /// that of the last entry the file holds.
    struct LogPosition {
        var stream: UInt64
        var file: UInt64
    }

    /// Opens `partition`'s file under `directory` (kept from an earlier ownership, or new; its
    /// writer and checkpointer at CPU priority `niceness`), brings it to the log's end (from the newest snapshot when the log was trimmed past the
    /// file) and writes a takeover record under `fence`; the partition's entries are then
    /// written from here. Blocking: call it from a thread of its own. Throws when the fence
    /// stops holding, the cluster refuses the record, or the log cannot be read (an entry
    /// missing from it, or unreadable), naming it. `faultFile`: the file's commits fail while a
    /// file exists there (``StoreWriter``'s fault injection, for tests).
    public static func takeOver(partition: Int, under fence: Fence, fences: PartitionFences?, jetStream: any JetStreamClient,
                                layout: RegistryLogLayout, directory: String, snapshots: SnapshotSchedule.Settings = snapshotSchedule,
                                niceness: Int32 = 0, turns: SnapshotTurns? = nil, faultFile: String? = nil,
                                loop: EventLoop) throws -> RegistryPartition {
        let path = Self.path(of: partition, in: directory)
        // What an earlier process was logging when it ended.
        unlink(outgoingImagePath(of: path))
        let file = try StoreWriter(path: path, niceness: niceness, faultFile: faultFile, walLimitBytes: walLimitBytes)
        do {
            try waitForCompletion { file.keepAsRegistryPartition(completion: $0) }.get()
            let heldBefore = try waitForCompletion { file.registryLogSequence(completion: $0) }.get()
            var lastFailure: StoreError?
            var restored = 0
            var figures = RegistryTakeoverFigures()
            for _ in 0..<takeoverAttempts {
                let (read, figuresNow) = try readLog(of: partition, into: file, jetStream: jetStream, layout: layout, loop: loop)
                if figuresNow.snapshotBytes > 0 { restored += 1 }
                figures = figures + figuresNow
                let owned = RegistryPartition(partition: partition, path: path, file: file, jetStream: jetStream, layout: layout, loop: loop,
                                              fence: fence, fences: fences, read: read, snapshots: snapshots, turns: turns, figures: figuresNow)
                owned.snapshotCounts.withLock { $0.restored = restored }
                owned.fileHeldBeforeTakeover = heldBefore
                owned.takeoverFigures = figures
                do {
                    try owned.writeTakeoverRecord()
                    return owned
                } catch let error as StoreError {
                    // A write slipped in between the read and the record: read again.
                    guard owned.isLogMoved else { throw error }
                    lastFailure = error
                }
            }
            throw lastFailure ?? StoreError.storageFailure("registry partition \(partition): no takeover record could be written")
        } catch {
            file.close()
            throw error
        }
    }

    /// Brings `file` to the partition's log as it is now: from the newest snapshot when the log
    /// was trimmed past the file, then the entries after what it holds. Answers where that left
    /// it, and what it read. Blocking.
    static func readLog(of partition: Int, into file: StoreWriter, jetStream: any JetStreamClient, layout: RegistryLogLayout,
                        loop: EventLoop) throws -> (LogPosition, RegistryTakeoverFigures) {
        var figures = RegistryTakeoverFigures()
        var applied = try waitForCompletion { file.registryLogSequence(completion: $0) }.get()
        let stream = layout.partitionStreamName(partition)
        guard let state = try JetStream.retryingWhileForming({ () throws(NATSError) in try jetStream.streamState(stream) }) else {
            throw StoreError.storageFailure("registry partition \(partition)'s stream \(stream) did not answer as existing")
        }
        guard applied <= state.lastSequence else {
            throw StoreError.refused("\(file.path) holds registry partition \(partition) up to log sequence \(applied), but \(stream) ends at \(state.lastSequence): the file follows another cluster's log, or the stream was created again")
        }
        // Trimmed below a snapshot's first part: what the file lacks of it is in the snapshot.
        let marker = try jetStream.lastMessage(stream: stream, subject: layout.partitionSnapshotMarkerSubject(partition))
            .map { try RegistrySnapshotMarker(binaryEncoded: $0.payload) }
        if state.messages > 0, state.firstSequence > applied + 1 {
            guard let marker, marker.registrySequence >= applied else {
                throw StoreError.refused("\(file.path) holds registry partition \(partition) up to log sequence \(applied), but \(stream) starts at \(state.firstSequence) and no snapshot covers the entries between")
            }
            if marker.registrySequence > applied {
                let started = ContinuousClock.now
                // Received into a file beside the partition's, not into memory (``RegistryImageFile``).
                let receiver = try RegistrySnapshotReceiver(path: incomingImagePath(of: file.path))
                defer { unlink(receiver.path) }
                guard try marker.readParts(from: layout.partitionSnapshotPartSubject(partition), of: stream, jetStream: jetStream, loop: loop,
                                           into: { try receiver.add($0) }) else {
                    throw StoreError.storageFailure("registry partition \(partition)'s newest snapshot was trimmed while it was read; reading again")
                }
                let received = try receiver.finish()
                let sequence = switch received {
                case .image(let image): image.sequence
                case .rows(let snapshot): snapshot.sequence
                }
                guard sequence == marker.registrySequence else {
                    throw StoreError.storageFailure("registry partition \(partition)'s snapshot at \(marker.firstPart) holds sequence \(sequence), its marker says \(marker.registrySequence)")
                }
                switch received {
                case .image(let image): _ = try waitForCompletion { file.restoreRegistryImage(image, rules: .partition, completion: $0) }.get()
                case .rows(let snapshot): _ = try waitForCompletion { file.restoreRegistrySnapshot(snapshot, rules: .partition, completion: $0) }.get()
                }
                applied = sequence
                figures.snapshotBytes = receiver.receivedBytes
                figures.snapshotSeconds = (ContinuousClock.now - started).inSeconds
            }
        }
        guard let last = try jetStream.lastMessage(stream: stream, subject: layout.partitionEntrySubject(partition))?.sequence, last > applied else {
            return (LogPosition(stream: state.lastSequence, file: applied), figures)
        }
        let started = ContinuousClock.now
        (figures.tailEntries, figures.tailOperations, figures.tailBytes) = try applyEntries(of: partition, after: applied, through: last, into: file,
                                                                    jetStream: jetStream, layout: layout, loop: loop)
        figures.tailSeconds = (ContinuousClock.now - started).inSeconds
        return (LogPosition(stream: state.lastSequence, file: last), figures)
    }

    /// Applies the partition's entries after `applied` through `last` to `file`, in order, in
    /// batches (``replayBatch``): a batch goes to the file once it is full, or once the client
    /// holds no more of the log for now. Answers the entries, operations and bytes applied. Blocking.
    private static func applyEntries(of partition: Int, after applied: UInt64, through last: UInt64, into file: StoreWriter,
                                     jetStream: any JetStreamClient, layout: RegistryLogLayout, loop: EventLoop) throws -> (entries: Int, operations: Int, bytes: Int) {
        struct Replay {
            var delivered = 0
            var applied = (entries: 0, operations: 0, bytes: 0)
            var handed: UInt64
            var failure: StoreError?
            var batch: [LoggedRegistryEntry] = []
            var batchBytes = 0
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex(Replay(handed: applied))
        let window = DeliveryWindow(size: replayWindow)
        let subscription = try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.subscribeOrdered(to: layout.partitionEntrySubject(partition), from: .sequence(applied + 1), loop: loop,
                                           window: window) { message in
                let full = outcome.withLock { state -> [LoggedRegistryEntry]? in
                    state.delivered += 1
                    guard state.failure == nil, let sequence = message.stream?.sequence, sequence > state.handed, sequence <= last else {
                        window.release()
                        return nil
                    }
                    do throws(BinaryRecordReader.Damaged) {
                        // A takeover record changes no token; the file records its place.
                        let entry = message.headers[RegistryLogLayout.takeoverHeader] != nil
                            ? RegistryEntry([])! : try RegistryEntry(binaryEncoded: message.payload)
                        state.batch.append(LoggedRegistryEntry(entry: entry, sequence: sequence, previous: state.handed))
                        state.batchBytes += message.payload.count
                        state.applied.entries += 1
                        state.applied.operations += entry.operations.count
                        state.applied.bytes += message.payload.count
                        state.handed = sequence
                    } catch {
                        state.failure = .storageFailure("registry partition \(partition)'s log entry \(sequence) cannot be read (\(error))")
                        done.signal()
                        window.release()
                        return nil
                    }
                    guard state.batch.count >= replayBatch || state.batchBytes >= replayBatchBytes || sequence == last
                            || message.stream?.pending == 0 else { return nil }
                    defer { (state.batch, state.batchBytes) = ([], 0) }
                    return state.batch
                }
                guard let full, let end = full.last?.sequence else { return }
                file.applyRegistryEntries(full, rules: .partition) { result in
                    for _ in full { window.release() }
                    if case .failure(let error) = result { outcome.withLock { if $0.failure == nil { $0.failure = error } } }
                    if case .failure = result { done.signal() } else if end == last { done.signal() }
                }
            }
        }
        defer {
            window.close()
            subscription.cancel()
        }
        var seen = 0
        while done.wait(timeout: .now() + .seconds(Int(replayStall.components.seconds))) == .timedOut {
            let delivered = outcome.withLock { $0.delivered }
            guard delivered > seen else {
                throw StoreError.storageFailure("reading registry partition \(partition)'s log up to sequence \(last) delivered nothing for \(replayStall)")
            }
            seen = delivered
        }
        if let failure = outcome.withLock({ $0.failure }) { throw failure }
        return outcome.withLock { $0.applied }
    }

    /// Logs the takeover record and records its place in the file. Blocking.
    private func writeTakeoverRecord() throws {
        let result = Mutex<Result<Void, StoreError>?>(nil)
        let written = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            append(RegistryEntry([])!, headers: [RegistryLogLayout.takeoverHeader: String(fence.revision.value)]) { outcome in
                result.withLock { $0 = outcome.map { _ in () } }
                written.signal()
            }
        }
        written.wait()
        try result.withLock { $0 ?? .failure(.storageFailure("no answer")) }.get()
    }

    /// Whether a write was refused because the log moved on (on any thread).
    private var isLogMoved: Bool { (try? loop.sync { [self] in stopped != nil }) ?? false }

    /// Logs `operations` (this partition's, ``RegistryEntry/partitioned(_:by:)``) as one entry
    /// and applies it to the file once acknowledged; the summary is the file's.
    public func write(_ operations: [TokenOperation], completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        guard let entry = RegistryEntry(operations) else {
            return completion(.failure(.refused("only registry operations are logged to a registry partition")))
        }
        loop.execute { [self] in append(entry, completion: completion) }
    }

    /// Queues `entry` behind the ones waiting, and starts the next (on the loop).
    private func append(_ entry: RegistryEntry, headers: [String: String] = [:],
                        completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        if let stopped { return completion(.failure(stopped)) }
        waiting.append(.entry(entry, headers: headers, completion: completion))
        publishNext()
    }

    /// Starts the next waiting write, once the one before is acknowledged (each expects it).
    private func publishNext() {
        guard !publishing, !waiting.isEmpty else { return }
        publishing = true
        switch waiting.removeFirst() {
        case .entry(let entry, let headers, let completion):
            guard headers.isEmpty, Self.summarizesNothing(entry) else { return publish(entry, headers: headers, completion: completion) }
            // Entries queued meanwhile behind it go with it, as one logged entry: under a steady
            // stream of lists, one compare-and-set and one transaction for many.
            var operations = entry.operations
            var completions = [completion]
            var bytes = entry.binaryEncoded.count
            let byteLimit = min(Self.coalescedBytes, jetStream.messaging.maximumPayload / 2)
            while case .entry(let next, let nextHeaders, let nextCompletion)? = waiting.first, nextHeaders.isEmpty, Self.summarizesNothing(next),
                  case let nextBytes = next.binaryEncoded.count, bytes + nextBytes <= byteLimit {
                waiting.removeFirst()
                operations += next.operations
                completions.append(nextCompletion)
                bytes += nextBytes
            }
            guard completions.count > 1, let merged = RegistryEntry(operations) else { return publish(entry, headers: headers, completion: completion) }
            let each = completions
            publish(merged, headers: [:]) { result in each.forEach { $0(result) } }
        case .snapshot:
            writeSnapshot()
        }
    }

    /// Bytes of one logged entry made of several queued ones at most (and half the servers'
    /// `max_payload`).
    static let coalescedBytes = 256 * 1_024

    /// Whether applying `entry` changes no summary (it deactivates nothing on APNs' word): such
    /// entries may be logged as one, and each of their lists is told the same empty summary.
    private static func summarizesNothing(_ entry: RegistryEntry) -> Bool {
        !entry.operations.contains { if case .deactivateToken = $0 { true } else { false } }
    }

    private func publish(_ entry: RegistryEntry, headers: [String: String],
                         completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        let bytes = entry.binaryEncoded
        appender.append(bytes, headers: headers, expected: lastSequence, id: nextMessageID(), since: .now,
                        refusal: { [self] in fenceRefusal() }) { [self] result in
            switch result {
            case .success(let sequence):
                let previous = fileSequence
                (lastSequence, fileSequence) = (sequence, sequence)
                file.applyRegistryEntry(entry, sequence: sequence, previous: previous, rules: .partition) { [self] applied in
                    loop.execute { [self] in
                        guard case .failure(let error) = applied else { return completion(applied) }
                        completion(.failure(fileFellBehind(at: sequence, because: error)))
                    }
                }
                schedule.logged(bytes.count, to: partition)
                if schedule.isDue(partition), !snapshotQueued {
                    snapshotQueued = true
                    queueSnapshotInTurn()
                }
            case .failure(let failure):
                if failure.logMayHaveMoved { stop(failure.error) }
                completion(.failure(failure.error))
            }
            publishing = false
            publishNext()
        }
    }

    private func nextMessageID() -> String {
        written += 1
        return "\(writerID):\(written)"
    }

    // MARK: Snapshots

    /// The log sequence the partition's file held when its takeover began: 0 for a new file,
    /// more for a file kept from an earlier ownership, read on from there.
    public private(set) var fileHeldBeforeTakeover: UInt64 = 0

    /// What this partition's snapshots did since the takeover (restored: read by the takeover).
    public var snapshotStatistics: SnapshotStatistics { snapshotCounts.withLock { $0 } }

    /// What the takeover read (every attempt's reads added), and how long it took.
    public private(set) var takeoverFigures = RegistryTakeoverFigures()

    /// Reads the file's partition tables (every entry handed to it is applied first: the file
    /// applies in order) and logs them in parts, then their marker, then trims below the first
    /// part. Nothing else is logged meanwhile. A part refused or lost leaves the log whole.
    private func writeSnapshot() {
        let held = fileSequence
        file.writeRegistryImage(rules: .partition, to: Self.outgoingImagePath(of: path)) { [self] written in
            loop.execute { [self] in
                switch written {
                case .success(let image) where image.sequence == held:
                    writePart(0, firstPart: nil, of: image)
                case .success(let image):
                    snapshotDone(failed: .storageFailure("registry partition \(partition)'s file holds \(image.sequence) where its log handed it \(held)"))
                case .failure(let error):
                    snapshotDone(failed: error)
                }
            }
        }
    }

    /// Logs part `index` of the snapshot (each read from the image's file as it goes), then the
    /// next; after the last, the marker and the trim.
    private func writePart(_ index: Int, firstPart: UInt64?, of image: RegistryImageFile) {
        let partBytes = schedule.settings.maximumPartBytes
        let count = SnapshotParts.count(of: image.loggedByteCount, partBytes: partBytes)
        guard index < count else {
            let marker = RegistrySnapshotMarker(registrySequence: image.sequence, firstPart: firstPart ?? lastSequence, parts: count)
            return appendSnapshotMessage(marker.binaryEncoded, to: layout.partitionSnapshotMarkerSubject(partition), headers: [:]) { [self] _ in
                snapshotCounts.withLock {
                    $0.written += 1
                    if count > 1 { $0.writtenInParts += 1 }
                }
                schedule.snapshotted(image.loggedByteCount, partition: partition)
                trim(below: firstPart ?? lastSequence)
            }
        }
        let part: [UInt8]
        do {
            part = try image.loggedBytes(SnapshotParts.range(of: index, in: image.loggedByteCount, partBytes: partBytes))
        } catch {
            return snapshotDone(failed: error)
        }
        appendSnapshotMessage(part, to: layout.partitionSnapshotPartSubject(partition),
                              headers: [RegistryLogLayout.snapshotHeader: SnapshotParts.header(index: index + 1, count: count)]) { [self] sequence in
            writePart(index + 1, firstPart: firstPart ?? sequence, of: image)
        }
    }

    /// Logs one message of a snapshot, then `next` with its sequence; a failure ends the snapshot.
    private func appendSnapshotMessage(_ bytes: [UInt8], to subject: String, headers: [String: String],
                                       then next: @escaping @Sendable (UInt64) -> Void) {
        appender.append(bytes, to: subject, headers: headers, expected: lastSequence, id: nextMessageID(), since: .now,
                        refusal: { [self] in fenceRefusal() }) { [self] result in
            switch result {
            case .success(let sequence):
                lastSequence = sequence
                next(sequence)
            case .failure(let failure):
                if failure.logMayHaveMoved { stop(failure.error) }
                snapshotDone(failed: failure.error)
            }
        }
    }

    /// Removes what the snapshot whose first part is at `sequence` covers: the entries and the
    /// snapshots before it. Sent only while the fence holds.
    private func trim(below sequence: UInt64) {
        guard fenceRefusal() == nil, let requests = apiRequests(jetStream) else { return snapshotDone(failed: nil, trimFailed: true) }
        requests.purge(stream: layout.partitionStreamName(partition), below: sequence, timeout: .seconds(10)) { [self] result in
            switch result {
            case .success(let removed):
                snapshotCounts.withLock { $0.trimmedMessages += removed }
                snapshotDone(failed: nil)
            case .failure:
                snapshotDone(failed: nil, trimFailed: true)
            }
        }
    }

    private func snapshotDone(failed: StoreError?, trimFailed: Bool = false) {
        unlink(Self.outgoingImagePath(of: path))
        if failed != nil { snapshotCounts.withLock { $0.failed += 1 } }
        if trimFailed { snapshotCounts.withLock { $0.failedTrims += 1 } }
        snapshotQueued = false
        releaseTurn()
        publishing = false
        publishNext()
    }

    /// Queues the snapshot behind the writes waiting once this partition has its turn (at once
    /// without turns). The writes go on meanwhile: waiting for a turn holds none of them.
    private func queueSnapshotInTurn() {
        guard let turns else {
            waiting.append(.snapshot)
            return
        }
        turns.take { [self] in
            holdsTurn = true
            guard stopped == nil else {
                snapshotQueued = false
                return releaseTurn()
            }
            waiting.append(.snapshot)
            publishNext()
        }
    }

    private func releaseTurn() {
        guard holdsTurn else { return }
        holdsTurn = false
        turns?.done()
    }

    /// Why an entry may not be sent now: the takeover's fence no longer holds.
    private func fenceRefusal() -> StoreError? {
        guard let fences, !fences.holds(fence, of: partition) else { return nil }
        return .storageFailure("registry partition \(partition): the lease this gateway took it over under (\(fence)) no longer holds; the write is dropped")
    }

    /// Told (on the loop) when the file could not apply an entry the log holds: the partition
    /// stops, and is to be taken up again under the same fence, which reads the log into the
    /// file from where it stopped (``PartitionedRegistry``'s take-up does).
    var onFileBehind: (@Sendable (Int) -> Void)?

    /// The file did not apply the logged entry at `sequence`: every later entry would find a gap
    /// in it, so none is written until the partition is taken up again. The entry is in the log,
    /// so its list is told to retry (a storage failure), not that it was refused.
    private func fileFellBehind(at sequence: UInt64, because error: StoreError) -> StoreError {
        let reason = StoreError.storageFailure("registry partition \(partition)'s file could not apply log entry \(sequence) (\(error)); it is read from the log again, retry")
        guard stopped == nil else { return reason }
        stop(reason)
        onFileBehind?(partition)
        return reason
    }

    /// No more entries: those waiting fail with `reason`.
    private func stop(_ reason: StoreError) {
        if stopped == nil { stopped = reason }
        let failed = waiting
        waiting.removeAll()
        // A snapshot dropped before it started gives its turn back; one under way does when it ends.
        if failed.contains(where: { if case .snapshot = $0 { true } else { false } }) {
            snapshotQueued = false
            releaseTurn()
        }
        for case .entry(_, _, let completion) in failed { completion(.failure(reason)) }
    }

    /// Stops writing, waits for the file to apply what was logged and closes it; with
    /// `deletingFile` (the partition was let go) removes it. Blocking: never call it from `loop`.
    public func close(deletingFile: Bool) {
        try? loop.sync { [self] in stop(.storageFailure("registry partition \(partition) was let go by this gateway")) }
        file.close()
        // An image being logged when it stopped is no use to anyone now.
        unlink(Self.outgoingImagePath(of: path))
        guard deletingFile else { return }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}
