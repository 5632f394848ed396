import Dispatch
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// What compaction of the registry did since it was opened.
public struct RegistryCompactionStatistics: Sendable, Equatable {
    /// Snapshots this gateway stored (its copy, as the holder of partition 0).
    public var written = 0
    /// Snapshots this gateway's copy was restored from (its file was behind the log's start).
    public var restored = 0
    /// Log entries trimmed below a snapshot by this gateway.
    public var trimmedEntries: UInt64 = 0
}

/// ``PersonalStoreWriter`` for gateways on a cluster: the token registry is shared, the rest of
/// the personal side (jobs, dead letters, idempotency keys, the outbox) stays in the gateway's
/// own SQLite file.
///
/// - **One log, a copy per gateway.** The registry part of a list (``RegistryEntry``) is logged
///   as one message to the registry stream (``RegistryLogLayout``); every gateway applies the
///   stream's entries, in stream order, to the registry tables of its own file, recording the
///   sequence in the same transaction (``StoreWriter/applyRegistryEntry(_:sequence:previous:completion:)``).
///   The copies agree because they apply the same entries in the same order, and the audience
///   scans stay the SQLite reader's (token order, bounded pages) on a file, never in memory.
///   Why a log and not one subject per token: docs/cluster.md, "The shared token registry".
/// - **Durability**: a list's registry part is durable once the cluster acknowledged it; its
///   completion waits until this gateway's copy has applied it too (read-your-writes, and the
///   summary of what it changed is the copy's), then commits the rest of the list to the file.
/// - **All-or-nothing, but for the storage**: the file part of a list is checked by the file's
///   rules before the registry part is logged, so a list they refuse changes nothing. A list
///   whose registry part was logged and whose file part then fails for the storage (a full
///   disk, a crash in between) keeps the registry part: every registry operation can be
///   repeated with the same outcome, so the retry that follows loses nothing.
/// - **Order**: lists complete in submission order, and a list's file part is committed only
///   after every earlier list's (a job checkpoint never overtakes an earlier one); registry
///   parts are published at once, one after the other, and pipeline.
///
/// Confined to `loop` (the cluster node's store loop); completions run there.
public final class SharedTokenRegistry: PersonalStoreWriter, @unchecked Sendable {
    /// How long a list's registry part whose publish got no answer is tried again (same message id).
    public static let retryLimit: Duration = .seconds(10)

    public let layout: RegistryLogLayout
    let jetStream: any JetStreamClient
    let loop: EventLoop
    /// The gateway's own personal file: the copy of the registry, and everything not shared.
    var local: StoreWriter { queue.local }
    let clock: any WallClock
    let writerID: String
    /// How long an acknowledged entry may wait for this gateway's copy before its list fails.
    let applyLimit: Duration

    /// The lists in submission order, with their file parts (``RegistryListQueue``).
    let queue: RegistryListQueue
    typealias PendingList = RegistryListQueue.PendingList

    // Confined to `loop`.
    /// Own entries acknowledged and waiting for the copy, by log sequence.
    var waiting: [UInt64: PendingList] = [:]
    private var written: UInt64 = 0
    private var sweepTimer: LoopTimer?
    var projection = RegistryProjection()
    var restartTimer: LoopTimer?

    init(jetStream: any JetStreamClient, layout: RegistryLogLayout, local: StoreWriter, loop: EventLoop, clock: any WallClock, applyLimit: Duration) {
        self.applyLimit = applyLimit
        self.jetStream = jetStream
        self.layout = layout
        self.loop = loop
        self.clock = clock
        queue = RegistryListQueue(local: local, loop: loop, clock: clock)
        writerID = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 36) }.joined()
    }

    // MARK: DurableStoreWriter

    /// Failing while the file fails or the copy cannot follow the log (``RegistryProjection``).
    /// A publish the cluster refuses fails its own list only: the cluster's state shows in the
    /// channel store's health and the connection's readiness.
    public var health: StoreHealth {
        if let failure = projectionHealth.withLock({ $0 }) { return failure }
        return local.health
    }
    public var isOpen: Bool { queue.isOpen }
    public var queueDepth: Int { queue.queueDepth }
    public var statistics: StoreWriterStatistics { queue.statistics }
    /// The projection's failure, readable from any thread.
    let projectionHealth = Mutex<StoreHealth?>(nil)
    /// How often the copy subscribed again because a message of the log was lost on the way
    /// (the client drops messages a slow subscriber leaves pending); the figures report it.
    public let gapsReadAgain = Atomic<Int>(0)
    /// What compaction did since the registry was opened (`/metrics`).
    public var compactionStatistics: RegistryCompactionStatistics { compactionCounts.withLock { $0 } }
    let compactionCounts = Mutex(RegistryCompactionStatistics())
    /// The last log sequence this gateway's copy has applied, readable from any thread: a
    /// personal job accepted here records it, and a slice of that job waits, wherever it runs,
    /// for a copy at least this far before it reads its audience.
    public var appliedSequence: UInt64 { appliedPosition.load(ordering: .acquiring) }
    let appliedPosition = Atomic<UInt64>(0)
    /// The log's last sequence when the registry was opened: until the copy has applied it, the
    /// copy is still catching up (a new gateway reads the whole log) and cannot answer for the
    /// registry (``isCaughtUp``).
    public let catchUpTarget = Atomic<UInt64>(0)
    /// Whether the copy has applied the log as far as it went when the registry was opened:
    /// until then token reads and registrations through this gateway are refused, and slices
    /// here wait, while the gateway already serves its channels.
    public var isCaughtUp: Bool { appliedSequence >= catchUpTarget.load(ordering: .acquiring) }

    /// Refuses later lists, waits for the submitted ones to complete, stops following the log
    /// and closes the file.
    public func close() {
        queue.closeAndWait()
        guard !loop.inEventLoop else { return }
        try? loop.sync { [self] in stopFollowing() }
        local.close()
    }

    // MARK: Writes

    public func submit(summarizing operations: [TokenOperation],
                       completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        queue.submit(operations, completion: completion) { [self] entry, list in publish(entry, for: list) }
    }

    private func publish(_ entry: RegistryEntry, for list: PendingList) {
        written += 1
        publish(entry.binaryEncoded, id: "\(writerID):\(written)", for: list, since: .now)
        scheduleSweep()
    }

    /// Logs an entry, repeating the same message after a lost answer until ``retryLimit``.
    private func publish(_ bytes: [UInt8], id: String, for list: PendingList, since: ContinuousClock.Instant) {
        jetStream.publish(bytes, to: layout.subject, headers: [RegistryLogLayout.writerHeader: writerID],
                          conditions: .init(messageID: id), loop: loop) { [self] result in
            switch result {
            case .success(let acknowledgement):
                list.acknowledgedAt = .now
                if let summary = projection.takeOwnSummary(at: acknowledgement.sequence) {
                    list.registrySummary = summary
                } else {
                    waiting[acknowledgement.sequence] = list
                }
            case .failure(let error) where error.jetStreamCode != 0:
                list.result = .failure(.storageFailure("the cluster refused the token registry entry: \(error)"))
            case .failure(let error):
                guard ContinuousClock.now - since < Self.retryLimit else {
                    list.result = .failure(.storageFailure("the cluster did not store the token registry entry within \(Self.retryLimit): \(error)"))
                    break
                }
                let timer = LoopTimer(loop: loop) { [self] in publish(bytes, id: id, for: list, since: since) }
                timer.schedule(after: .milliseconds(100))
                retryTimers[id] = timer
                return
            }
            retryTimers[id] = nil
            queue.advance()
        }
    }

    private var retryTimers: [String: LoopTimer] = [:]

    /// The copy applied an entry this store logged.
    func ownEntryApplied(at sequence: UInt64, summary: TokenWriteSummary) {
        guard let list = waiting.removeValue(forKey: sequence) else { return projection.keepOwnSummary(summary, at: sequence) }
        list.registrySummary = summary
        queue.advance()
    }

    /// While entries wait for the copy, fails those that waited longer than the apply limit.
    private func scheduleSweep() {
        guard sweepTimer == nil else { return }
        let timer = LoopTimer(loop: loop) { [self] in
            sweepTimer = nil
            let now = ContinuousClock.now
            for (sequence, list) in waiting where list.acknowledgedAt.map({ now - $0 > applyLimit }) ?? false {
                waiting[sequence] = nil
                let why = projectionFailure.map { ": \($0)" } ?? ""
                list.result = .failure(.storageFailure(
                    "the token registry entry is stored in the cluster (log sequence \(sequence)) but this gateway's copy has not applied it within \(applyLimit)\(why)"))
            }
            queue.advance()
            if !waiting.isEmpty || queue.lists.contains(where: \.waitsForRegistry) { scheduleSweep() }
        }
        sweepTimer = timer
        timer.schedule(after: .seconds(1))
    }
}
