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
    /// Entries handed to the file ahead of what it applied while the log is read.
    static let replayWindow = 16

    public let partition: Int
    /// The partition's file.
    public let path: String
    let file: StoreWriter
    private var appender: LogAppender!
    private let loop: EventLoop
    private let fence: Fence
    private let fences: PartitionFences?
    private let writerID: String

    // Confined to `loop`.
    /// The log's last sequence as this partition knows it: every entry up to it is in the file
    /// or on its way there, in order.
    private var lastSequence: UInt64
    private var written: UInt64 = 0
    private var waiting: [(entry: RegistryEntry, headers: [String: String], completion: @Sendable (Result<TokenWriteSummary, StoreError>) -> Void)] = []
    private var publishing = false
    /// Why no more entries are written (the log moved, the partition was let go).
    private var stopped: StoreError?
    private var requests: NATSRequests?

    private init(partition: Int, path: String, file: StoreWriter, jetStream: any JetStreamClient, layout: RegistryLogLayout, loop: EventLoop,
                 fence: Fence, fences: PartitionFences?, lastSequence: UInt64) {
        self.partition = partition
        self.path = path
        self.file = file
        self.loop = loop
        self.fence = fence
        self.fences = fences
        self.lastSequence = lastSequence
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

    /// Opens `partition`'s file under `directory` (kept from an earlier ownership, or new),
    /// brings it to the log's end and writes a takeover record under `fence`; the partition's
    /// entries are then written from here. Blocking: call it from a thread of its own. Throws
    /// when the fence stops holding, the cluster refuses the record, or the log cannot be read
    /// (an entry missing from it, or unreadable), naming it.
    public static func takeOver(partition: Int, under fence: Fence, fences: PartitionFences?, jetStream: any JetStreamClient,
                                layout: RegistryLogLayout, directory: String, loop: EventLoop) throws -> RegistryPartition {
        let path = Self.path(of: partition, in: directory)
        let file = try StoreWriter(path: path)
        do {
            var lastFailure: StoreError?
            for _ in 0..<takeoverAttempts {
                let read = try readLog(of: partition, into: file, jetStream: jetStream, layout: layout, loop: loop)
                let owned = RegistryPartition(partition: partition, path: path, file: file, jetStream: jetStream, layout: layout, loop: loop,
                                              fence: fence, fences: fences, lastSequence: read)
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

    /// Applies the partition's log after what `file` holds, up to the log's last message now;
    /// answers the sequence the file holds then. Blocking.
    static func readLog(of partition: Int, into file: StoreWriter, jetStream: any JetStreamClient, layout: RegistryLogLayout,
                        loop: EventLoop) throws -> UInt64 {
        let applied = try waitForCompletion { file.registryLogSequence(completion: $0) }.get()
        let stream = layout.partitionStreamName(partition)
        guard let state = try JetStream.retryingWhileForming({ () throws(NATSError) in try jetStream.streamState(stream) }) else {
            throw StoreError.storageFailure("registry partition \(partition)'s stream \(stream) did not answer as existing")
        }
        guard applied <= state.lastSequence else {
            throw StoreError.refused("\(file.path) holds registry partition \(partition) up to log sequence \(applied), but \(stream) ends at \(state.lastSequence): the file follows another cluster's log, or the stream was created again")
        }
        guard state.lastSequence > applied else { return applied }
        guard state.firstSequence <= applied + 1 else {
            throw StoreError.refused("\(file.path) holds registry partition \(partition) up to log sequence \(applied), but \(stream) starts at \(state.firstSequence): the entries between were removed")
        }
        let last = state.lastSequence
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<(delivered: Int, handed: UInt64, failure: StoreError?)>((0, applied, nil))
        let window = DeliveryWindow(size: replayWindow)
        let subscription = try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.subscribeOrdered(to: layout.partitionEntrySubject(partition), from: .sequence(applied + 1), loop: loop,
                                           window: window) { message in
                let handed = outcome.withLock { state -> (previous: UInt64, entry: RegistryEntry)? in
                    state.delivered += 1
                    guard state.failure == nil, let sequence = message.stream?.sequence, sequence > state.handed, sequence <= last else { return nil }
                    do throws(BinaryRecordReader.Damaged) {
                        // A takeover record changes no token; the file records its place.
                        let entry = message.headers[RegistryLogLayout.takeoverHeader] != nil
                            ? RegistryEntry([])! : try RegistryEntry(binaryEncoded: message.payload)
                        defer { state.handed = sequence }
                        return (state.handed, entry)
                    } catch {
                        state.failure = .storageFailure("registry partition \(partition)'s log entry \(sequence) cannot be read (\(error))")
                        done.signal()
                        return nil
                    }
                }
                guard let handed, let sequence = message.stream?.sequence else { return window.release() }
                file.applyRegistryEntry(handed.entry, sequence: sequence, previous: handed.previous, rules: .partition) { result in
                    window.release()
                    if case .failure(let error) = result { outcome.withLock { if $0.failure == nil { $0.failure = error } } }
                    if case .failure = result { done.signal() } else if sequence == last { done.signal() }
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
        return last
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
        waiting.append((entry, headers, completion))
        publishNext()
    }

    private func publishNext() {
        guard !publishing, !waiting.isEmpty else { return }
        let (entry, headers, completion) = waiting.removeFirst()
        publishing = true
        written += 1
        let expected = lastSequence
        appender.append(entry.binaryEncoded, headers: headers, expected: expected, id: "\(writerID):\(written)", since: .now,
                        refusal: { [self] in fenceRefusal() }) { [self] result in
            publishing = false
            switch result {
            case .success(let sequence):
                lastSequence = sequence
                file.applyRegistryEntry(entry, sequence: sequence, previous: expected, rules: .partition) { [loop] applied in
                    loop.execute { completion(applied) }
                }
            case .failure(let failure):
                if failure.logMayHaveMoved { stop(failure.error) }
                completion(.failure(failure.error))
            }
            publishNext()
        }
    }

    /// Why an entry may not be sent now: the takeover's fence no longer holds.
    private func fenceRefusal() -> StoreError? {
        guard let fences, !fences.holds(fence, of: partition) else { return nil }
        return .storageFailure("registry partition \(partition): the lease this gateway took it over under (\(fence)) no longer holds; the write is dropped")
    }

    /// No more entries: those waiting fail with `reason`.
    private func stop(_ reason: StoreError) {
        if stopped == nil { stopped = reason }
        let failed = waiting
        waiting.removeAll()
        for (_, _, completion) in failed { completion(.failure(reason)) }
    }

    /// Stops writing, waits for the file to apply what was logged and closes it; with
    /// `deletingFile` (the partition was let go) removes it. Blocking: never call it from `loop`.
    public func close(deletingFile: Bool) {
        try? loop.sync { [self] in stop(.storageFailure("registry partition \(partition) was let go by this gateway")) }
        file.close()
        guard deletingFile else { return }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}
