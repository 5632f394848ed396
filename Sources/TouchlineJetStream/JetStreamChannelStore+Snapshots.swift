import NATS
import Synchronization
import TouchlineStore

/// What the store did with snapshots since it was opened (`/metrics`).
public struct SnapshotStatistics: Sendable, Equatable {
    /// Snapshots logged (every part acknowledged by the cluster).
    public var written = 0
    /// Of those, snapshots written in several parts (larger than the servers' `max_payload`).
    public var writtenInParts = 0
    /// Snapshots whose publish failed (refused as fenced, or unanswered); the log stays whole.
    public var failed = 0
    /// Snapshots read while replaying a partition.
    public var restored = 0
    /// Log messages removed below a snapshot.
    public var trimmedMessages: UInt64 = 0
    /// Trims that failed (the next snapshot's trim removes what this one would have).
    public var failedTrims = 0
}

/// Snapshots of a partition's channels in the partition's own log (docs/cluster.md,
/// "Snapshots"). A snapshot is a message of the log like a batch, written by compare-and-set on
/// the log's last sequence: only the partition's owner, having read the whole log, can write it,
/// so it holds exactly what replaying the log up to it would give. Replay replaces the
/// partition's channels with it. Once it is acknowledged, the messages before it are trimmed:
/// whatever a reader has or has not read of them, it reaches this snapshot next.
extension JetStreamChannelStore {
    /// What the store did with snapshots so far.
    public var snapshotStatistics: SnapshotStatistics { snapshotCounts.withLock { $0 } }

    /// Asks for a snapshot of `partition` behind the writes already queued, whatever the
    /// schedule says (tests, and an operator's wish to shorten a log).
    public func requestSnapshot(of partition: Int) {
        loop.execute { [self] in
            queueSnapshot(of: partition)
            startNext()
        }
    }

    /// Logs a snapshot of `partition` if this store may write its log (it has read the log to
    /// its end and wrote or read it last), then trims the log below it. On the loop, as the
    /// partition log's one write in flight; `done` lets the next write start.
    func writeSnapshot(of partition: Int, done: @escaping @Sendable () -> Void) {
        snapshotQueued.remove(partition)
        let log = ChannelLogLayout.Log.partition(partition)
        guard !stale.contains(partition), lastSequence[log] != nil else { return done() }
        let partitioning = layout.partitioning
        let layout = layout
        let tables = committed.tables.withLock { tables in
            tables.subset(where: { id in partitioning.partition(of: id) == partition },
                          outbox: { id in layout.log(ofOutboxID: id) == log })
        }
        let bytes = tables.binaryEncoded
        let parts = SnapshotParts.cut(bytes, partBytes: schedule.settings.maximumPartBytes)
        writeSnapshotParts(parts, from: 0, first: nil, of: partition, size: bytes.count, done: done)
    }

    /// Logs part `index` of `parts` and the ones after it, each over the one before; once the
    /// last is stored, the log is trimmed below the first. A part that fails ends the snapshot:
    /// the parts already logged are ignored by replay.
    private func writeSnapshotParts(_ parts: [[UInt8]], from index: Int, first: UInt64?, of partition: Int, size: Int,
                                    done: @escaping @Sendable () -> Void) {
        let log = ChannelLogLayout.Log.partition(partition)
        publish(parts[index], to: log, headers: [ChannelLogLayout.snapshotHeader: SnapshotParts.header(index: index + 1, count: parts.count)],
                id: nextMessageID(), since: .now, fence: ownFence(of: log)) { [self] result in
            switch result {
            case .success(let sequence):
                lastSequence[log] = sequence
                let first = first ?? sequence
                guard index + 1 == parts.count else {
                    return writeSnapshotParts(parts, from: index + 1, first: first, of: partition, size: size, done: done)
                }
                schedule.snapshotted(size, partition: partition)
                snapshotCounts.withLock {
                    $0.written += 1
                    if parts.count > 1 { $0.writtenInParts += 1 }
                }
                trim(log, below: first)
            case .failure:
                snapshotCounts.withLock { $0.failed += 1 }
            }
            done()
        }
    }

    /// Removes the messages of `log` before the snapshot at `sequence` (not waited for).
    private func trim(_ log: ChannelLogLayout.Log, below sequence: UInt64) {
        guard let requests = apiRequests else {
            snapshotCounts.withLock { $0.failedTrims += 1 }
            return
        }
        requests.purge(stream: layout.streamName(of: log), below: sequence, timeout: .seconds(5)) { [self] result in
            snapshotCounts.withLock { counts in
                switch result {
                case .success(let removed): counts.trimmedMessages += removed
                case .failure: counts.failedTrims += 1
                }
            }
        }
    }

    /// Applies one replayed message of `log`: a batch, or a snapshot that replaces the
    /// partition's channels. On the loop.
    func apply(_ message: NATSMessage, at sequence: UInt64, of log: ChannelLogLayout.Log) throws(StoreError) {
        let expected = (lastSequence[log] ?? 0) + 1
        if message.headers[ChannelLogLayout.takeoverHeader] != nil {
            guard case .partition = log, sequence == expected else {
                throw .refused("\(log), log sequence \(sequence): a takeover record out of place")
            }
            return
        }
        if let header = message.headers[ChannelLogLayout.snapshotHeader] {
            guard case .partition(let partition) = log else { throw .refused("\(log), log sequence \(sequence): a snapshot in the global log") }
            guard let (index, count) = SnapshotParts.parse(header) else {
                throw .refused("\(log), log sequence \(sequence): an unreadable snapshot part \"\(header)\"")
            }
            guard let whole = try readSnapshotPart(message.payload, index: index, count: count, at: sequence, expected: expected, of: log) else { return }
            let snapshot: ChannelTables
            do { snapshot = try ChannelTables(binaryEncoded: whole) } catch {
                throw .refused("\(log), snapshot ending at log sequence \(sequence): \(error)")
            }
            let (partitioning, layout) = (layout.partitioning, layout)
            do {
                try committed.tables.withLock { tables throws(StoreError) in
                    try tables.replaceChannels(where: { id in partitioning.partition(of: id) == partition },
                                               outbox: { id in layout.log(ofOutboxID: id) == log }, with: snapshot)
                }
            } catch {
                throw .refused("\(log), snapshot at log sequence \(sequence) cannot be restored: \(error)")
            }
            schedule.snapshotted(whole.count, partition: partition)
            snapshotCounts.withLock { $0.restored += 1 }
            // The snapshot's writer had every batch before it copied to the recordings.
            replayedRecordings[log] = nil
            return
        }
        // The parts of a snapshot whose writing stopped: the batches before them hold its state.
        snapshotReadings[log] = nil
        // Only a snapshot may follow a gap: the log is trimmed below snapshots and nowhere else.
        guard sequence == expected else {
            throw .refused("\(log): log sequences \(expected) to \(sequence - 1) are missing and no snapshot follows them")
        }
        let batch: WriteBatch
        do { batch = try WriteBatch(binaryEncoded: message.payload) } catch {
            throw .refused("\(log), log sequence \(sequence): \(error)")
        }
        do {
            let layout = layout
            try committed.tables.withLock { tables throws(StoreError) in
                try tables.apply(Self.forTables(batch)) { index in layout.outboxID(of: log, sequence: sequence, index: index) }
            }
        } catch {
            throw .refused("\(log), log sequence \(sequence) cannot be applied: \(error)")
        }
        replayedRecordings[log, default: []] += Self.recordedEvents(of: batch)
        if case .partition(let partition) = log { schedule.logged(message.payload.count, to: partition) }
    }

    /// Takes part `index` of `count` of a snapshot read at `sequence`; the whole snapshot once
    /// its last part is read, else nil. Part 1 may follow a gap (the log is trimmed below it); a
    /// later part is taken only right after the part before it, and a part without its
    /// predecessors (a snapshot whose writing stopped, read from its middle) is skipped.
    private func readSnapshotPart(_ part: [UInt8], index: Int, count: Int, at sequence: UInt64, expected: UInt64,
                                  of log: ChannelLogLayout.Log) throws(StoreError) -> [UInt8]? {
        if index == 1 {
            snapshotReadings[log] = SnapshotParts.Reading(count: count, firstPart: part, at: sequence)
        } else if snapshotReadings[log]?.add(part, index: index, at: sequence) != true {
            snapshotReadings[log] = nil
            guard sequence == expected else {
                throw .refused("\(log): log sequences \(expected) to \(sequence - 1) are missing and no snapshot follows them")
            }
            return nil
        }
        guard let reading = snapshotReadings[log], reading.isComplete else { return nil }
        snapshotReadings[log] = nil
        return reading.bytes
    }
}
