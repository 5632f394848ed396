import Glibc
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// How far this gateway's copy of the registry follows the log. Confined to the registry's loop.
struct RegistryProjection {
    /// The last sequence handed to the file, and the last one the file applied.
    var delivered: UInt64 = 0
    var applied: UInt64 = 0
    /// Bumped on every (re)subscription: messages of an earlier one are ignored.
    var generation = 0
    var subscription: (any MessageSubscription)?
    /// The subscription's entries handed to the file and not yet applied (``SharedTokenRegistry/applyWindow``).
    var window: DeliveryWindow?
    /// The subscription was made again because a message was missing: a second gap at once is
    /// one of the log's own.
    var readAgainForGap = false
    /// Own entries applied before their publish's acknowledgement arrived (a few at most).
    private var ownSummaries: [UInt64: TokenWriteSummary] = [:]

    mutating func takeOwnSummary(at sequence: UInt64) -> TokenWriteSummary? { ownSummaries.removeValue(forKey: sequence) }

    /// Keeps a summary for an acknowledgement still on its way; one whose list gave up waiting
    /// is dropped once the copy is far past it, so this stays small.
    mutating func keepOwnSummary(_ summary: TokenWriteSummary, at sequence: UInt64) {
        ownSummaries[sequence] = summary
        if ownSummaries.count > 1_024 { ownSummaries = ownSummaries.filter { $0.key + 65_536 > applied } }
    }
}

extension SharedTokenRegistry {
    /// A copy that stops following is started again after this long, from what it applied.
    public static let restartDelay: Duration = .seconds(1)
    /// Entries handed to the file ahead of what it applied: the file commits them together, and
    /// the rest of the log waits with the client and the servers (a new gateway reads the whole
    /// log: a gigabyte at 10 million tokens).
    public static let applyWindow = 16
    /// Opening gives up when the copy makes no progress for this long.
    static let catchUpStall: Duration = .seconds(10)

    /// Creates the registry stream if needed, and starts bringing the registry of `local` (the
    /// gateway's personal file) up to the log's end: before it returns with `waitForCatchUp` (so
    /// the first audience scan sees every token registered before the start), or in the
    /// background without (a new gateway then serves its channels at once, and ``isCaughtUp``
    /// says when its copy can answer). Blocks: call it from a starting thread, never from `loop`. `applyLimit`: how long a list whose registry part the cluster
    /// acknowledged may wait for this copy to apply it before the list fails. Refuses a file that follows another log (one that ends before the
    /// file's recorded sequence, or whose beginning was removed), naming both positions.
    /// `maximumBytes`: the log's size limit; registrations past it are refused.
    /// `snapshotMaximumBytes`: the snapshot stream's (``compact(_:fence:)``). A file behind the
    /// log's first entry (the log was compacted since) is restored from the newest snapshot first.
    public static func open(jetStream: any JetStreamClient, layout: RegistryLogLayout, replicas: Int, maximumBytes: Int? = nil,
                            snapshotMaximumBytes: Int? = nil, local: StoreWriter, loop: EventLoop,
                            clock: any WallClock = SystemClock(), applyLimit: Duration = .seconds(10),
                            waitForCatchUp: Bool = true) throws -> SharedTokenRegistry {
        let state = try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureBoundedStream(.init(name: layout.snapshotStreamName, subjects: layout.snapshotSubjects, replicas: replicas,
                                                    maximumBytes: snapshotMaximumBytes))
            return try jetStream.ensureBoundedStream(.init(name: layout.streamName, subjects: [layout.subject], replicas: replicas,
                                                           duplicateWindow: .seconds(120), maximumBytes: maximumBytes))
        }
        var recorded = try waitForCompletion { local.registryLogSequence(completion: $0) }.get()
        guard recorded <= state.lastSequence else {
            throw StoreError.refused("\(local.path) holds the token registry up to log sequence \(recorded), but \(layout.streamName) ends at \(state.lastSequence): the file follows another cluster's log, or the stream was created again")
        }
        var restored = false
        if state.firstSequence > recorded + 1 {
            recorded = try restoreNewestSnapshot(jetStream: jetStream, layout: layout, local: local, loop: loop, behind: recorded,
                                                 logStart: state.firstSequence)
            restored = true
        }
        let registry = SharedTokenRegistry(jetStream: jetStream, layout: layout, local: local, loop: loop, clock: clock, applyLimit: applyLimit)
        if restored { registry.compactionCounts.withLock { $0.restored += 1 } }
        registry.catchUpTarget.store(state.lastSequence, ordering: .releasing)
        try loop.sync { [registry, recorded] in
            registry.projection.applied = recorded
            registry.appliedPosition.store(recorded, ordering: .releasing)
            try registry.follow(from: recorded)
        }
        guard waitForCatchUp else { return registry }
        do {
            try registry.waitUntilApplied(state.lastSequence)
        } catch {
            try? loop.sync { [registry] in registry.stopFollowing() }
            throw error
        }
        return registry
    }

    /// Restores `local`, which holds the log up to `recorded`, from the newest snapshot, which
    /// must reach the log's first entry `logStart`; returns the sequence it holds now. Blocks.
    static func restoreNewestSnapshot(jetStream: any JetStreamClient, layout: RegistryLogLayout, local: StoreWriter, loop: EventLoop,
                                      behind recorded: UInt64, logStart: UInt64) throws -> UInt64 {
        let snapshot = try readNewestSnapshot(jetStream: jetStream, layout: layout, loop: loop)
        guard let snapshot, snapshot.sequence + 1 >= logStart else {
            let newest = snapshot.map { "the newest snapshot holds \($0.sequence)" } ?? "there is no snapshot"
            throw StoreError.refused("\(local.path) holds the token registry up to log sequence \(recorded), but \(layout.streamName) starts at \(logStart) and \(newest): the entries between were removed")
        }
        _ = try waitForCompletion { local.restoreRegistrySnapshot(snapshot, completion: $0) }.get()
        return try waitForCompletion { local.registryLogSequence(completion: $0) }.get()
    }

    /// Subscribes to the log after `sequence`.
    func follow(from sequence: UInt64) throws {
        projection.generation += 1
        projection.delivered = sequence
        let generation = projection.generation
        let window = DeliveryWindow(size: Self.applyWindow)
        projection.window = window
        projection.subscription = try jetStream.subscribeOrdered(to: layout.subject, from: .sequence(sequence + 1), loop: loop,
                                                                 window: window) { [self] message in
            receive(message, generation: generation, window: window)
        }
    }

    func stopFollowing() {
        projection.generation += 1
        // Opened first: a delivery thread waiting for a place must not hold the cancel up.
        projection.window?.close()
        projection.window = nil
        projection.subscription?.cancel()
        projection.subscription = nil
    }

    /// Hands an entry to the file, behind the ones handed before (the file applies in order).
    private func receive(_ message: NATSMessage, generation: Int, window: DeliveryWindow) {
        guard generation == projection.generation, let sequence = message.stream?.sequence, sequence > projection.delivered else {
            return window.release()
        }
        // Only compaction removes entries, from the log's start, so its sequences follow one
        // another. A message missing here was lost on the way (the client drops what a slow
        // subscriber leaves pending): read again from the last one handed over. Missing again at
        // once, it is missing from the log: trimmed below a snapshot (the copy is restored from
        // it), or removed by hand (the copy stops before it).
        guard sequence == projection.delivered + 1 else {
            window.release()
            let delivered = projection.delivered
            stopFollowing()
            guard !projection.readAgainForGap else {
                report(.storageFailure("token registry log entry \(delivered + 1) is missing (the next is \(sequence)): entries were removed from the log; this gateway's copy stops before it"))
                return restoreBehindTrimmedLog(applied: projection.applied)
            }
            projection.readAgainForGap = true
            gapsReadAgain.add(1, ordering: .relaxed)
            do { try follow(from: delivered) } catch { report(.storageFailure("cannot follow the token registry log: \(error)")) }
            return
        }
        projection.readAgainForGap = false
        let entry: RegistryEntry
        do {
            entry = try RegistryEntry(binaryEncoded: message.payload)
        } catch {
            // Skipping it would let this copy differ from the others for good: stop, and say so.
            stopFollowing()
            return report(.storageFailure("token registry log entry \(sequence) cannot be read (\(error)); this gateway's copy stops before it"))
        }
        let previous = projection.delivered
        projection.delivered = sequence

        let own = message.headers[RegistryLogLayout.writerHeader] == writerID
        local.applyRegistryEntry(entry, sequence: sequence, previous: previous) { [self] result in
            window.release()
            loop.execute { [self] in applied(sequence, own: own, generation: generation, result) }
        }
    }

    private func applied(_ sequence: UInt64, own: Bool, generation: Int, _ result: Result<TokenWriteSummary, StoreError>) {
        switch result {
        case .success(let summary):
            projection.applied = max(projection.applied, sequence)
            appliedPosition.store(projection.applied, ordering: .releasing)
            // Only an entry of the subscription made after the failure shows the copy moves again
            // (one handed over before it may still complete).
            if generation == projection.generation { projectionHealth.withLock { $0 = nil } }
            if own { ownEntryApplied(at: sequence, summary: summary) }
        case .failure(let error):
            // The entries handed after it (refused as a gap) belong to the subscription stopped
            // here, so only the first failure of each subscription counts. Follow again from
            // what applied, after every failure: a retry that fails too (the disk still full)
            // is retried in turn (it used to stop the copy for good).
            guard generation == projection.generation else { return }
            report(error)
            stopFollowing()
            scheduleRestart()
        }
    }

    /// A copy whose next entry was trimmed below a snapshot: restored from the newest snapshot
    /// on a thread of its own (the reads block), then following from it. Nothing happens when
    /// the log still starts right after `applied` (the entry is missing from its middle).
    private func restoreBehindTrimmedLog(applied: UInt64) {
        let (jetStream, layout, local, loop) = (jetStream, layout, local, loop)
        DedicatedThread.start(name: "touchline-registry-restore") { [self] in
            let outcome = Result { () throws -> UInt64? in
                guard let start = try jetStream.streamState(layout.streamName)?.firstSequence, start > applied + 1 else { return nil }
                return try Self.restoreNewestSnapshot(jetStream: jetStream, layout: layout, local: local, loop: loop, behind: applied, logStart: start)
            }
            loop.execute { [self] in
                guard isOpen else { return }
                switch outcome {
                case .success(nil): return
                case .success(let restored?):
                    compactionCounts.withLock { $0.restored += 1 }
                    projectionHealth.withLock { $0 = nil }
                    projection.applied = max(projection.applied, restored)
                    appliedPosition.store(projection.applied, ordering: .releasing)
                    do { try follow(from: projection.applied) } catch { report(.storageFailure("cannot follow the token registry log: \(error)")) }
                case .failure(let error):
                    // Tried again (the file may have been full, the servers away): following
                    // again meets the same gap, and restores.
                    report((error as? StoreError) ?? .storageFailure("cannot restore the token registry from its snapshot: \(error)"))
                    scheduleRestart()
                }
            }
        }
    }

    private func scheduleRestart() {
        let timer = LoopTimer(loop: loop) { [self] in
            restartTimer = nil
            guard isOpen else { return }
            do {
                try follow(from: projection.applied)
            } catch {
                report(.storageFailure("cannot follow the token registry log: \(error)"))
                scheduleRestart()
            }
        }
        restartTimer = timer
        timer.schedule(after: Self.restartDelay)
    }

    /// Why the copy stopped following (the file failed, an entry is missing or cannot be read),
    /// until an entry of a later subscription applies: what ``health`` reports.
    var projectionFailure: StoreError? { projectionHealth.withLock { $0?.failure } }

    private func report(_ error: StoreError) {
        let now = clock.now()
        projectionHealth.withLock { health in
            var failing = health ?? .healthy
            if failing.failure == nil { failing.failingSince = now }
            failing.failure = error
            health = failing
        }
    }

    /// Waits (blocking, off the loop) until the copy has applied `sequence`; throws when it
    /// stops moving for ``catchUpStall``.
    func waitUntilApplied(_ sequence: UInt64) throws {
        var last = try loop.sync { [self] in projection.applied }
        var lastMove = ContinuousClock.now
        while last < sequence {
            usleep(20_000)
            let (applied, failure, retrying) = try loop.sync { [self] in (projection.applied, projectionFailure, restartTimer != nil) }
            // A failure the copy does not try again by itself (an entry missing or unreadable) ends the wait.
            if let failure, !retrying { throw failure }
            if applied > last {
                last = applied
                lastMove = .now
            } else if ContinuousClock.now - lastMove > Self.catchUpStall {
                throw failure ?? StoreError.storageFailure("the token registry copy stopped at log sequence \(applied) of \(sequence) for \(Self.catchUpStall)")
            }
        }
    }
}
