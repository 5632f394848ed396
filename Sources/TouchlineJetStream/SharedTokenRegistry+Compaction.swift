import Dispatch
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// When the registry log is compacted, and in parts of what size (`store.registrySnapshot…`).
public struct RegistryCompactionSettings: Sendable, Equatable {
    /// A snapshot is written once the copy has applied this many entries past the newest one.
    public var entriesBetweenSnapshots: UInt64
    /// The largest message of a snapshot: below the servers' `max_payload`.
    public var partBytes: Int

    public init(entriesBetweenSnapshots: UInt64 = 100_000, partBytes: Int = 512 << 10) {
        self.entriesBetweenSnapshots = entriesBetweenSnapshots
        self.partBytes = partBytes
    }
}

/// What one compaction did.
public enum RegistryCompactionOutcome: Sendable, Equatable {
    /// Fewer entries than the setting since the newest snapshot, which holds `newest`: nothing written.
    case notDue(newest: UInt64)
    /// The hold it was decided under moved before a write: what it wrote is ignored by readers.
    case fenced
    /// Another gateway wrote a snapshot meanwhile (the compare-and-set on the snapshot stream).
    case lostRace
    /// A snapshot of the copy at `sequence` stored in `parts` messages; the log trimmed below
    /// `trimmedBelow` (nil: the first snapshot, so nothing yet).
    case compacted(sequence: UInt64, parts: Int, trimmedBelow: UInt64?)
}

/// Where the newest complete snapshot is: a marker message written after its last part.
struct RegistrySnapshotMarker: Sendable, Equatable {
    static let binaryVersion: UInt8 = 1
    /// The registry log sequence the snapshot holds.
    let registrySequence: UInt64
    /// The snapshot stream's sequence of its first part; the others follow it one by one.
    let firstPart: UInt64
    let parts: Int

    var binaryEncoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.binaryVersion)
        writer.unsigned(registrySequence)
        writer.unsigned(firstPart)
        writer.unsigned(UInt64(parts))
        return writer.bytes
    }

    init(registrySequence: UInt64, firstPart: UInt64, parts: Int) {
        self.registrySequence = registrySequence
        self.firstPart = firstPart
        self.parts = parts
    }

    init(binaryEncoded bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.binaryVersion, of: "token registry snapshot marker")
        registrySequence = try reader.unsigned()
        firstPart = try reader.unsigned()
        parts = Int(try reader.unsigned())
        guard parts >= 1, reader.isAtEnd else { throw reader.damaged("a snapshot of \(parts) parts") }
    }
}

/// Compaction of the registry log (docs/cluster.md, "Compacting the token registry"): a copy's
/// registry tables at log sequence S are written, in parts, to a stream of their own, then a
/// marker naming them; the snapshot before it is purged, and the log is trimmed below that
/// earlier snapshot's sequence, so a copy a little behind still follows the log and one further
/// behind (a new gateway, one that was away) restores the newest snapshot and follows from S.
///
/// **Why it stays safe with several writers**: the log is trimmed only below the sequence of a
/// snapshot that was the newest when the compactor read the stream's last sequence, and every
/// part and the marker are written by compare-and-set on that last sequence. So snapshots are
/// stored one at a time, each at least as far along as the newest before it, and the stream
/// always holds one at or past every trim point. The holder of partition 0 compacts, and each
/// write and purge leaves only while that hold does (a paused compactor wakes without it).
extension SharedTokenRegistry {
    /// Compacts once if due. Blocks: call it from a thread of its own, never from the loop.
    public func compact(_ settings: RegistryCompactionSettings, fence: any SideEffectFence) throws -> RegistryCompactionOutcome {
        guard fence.holds else { return .fenced }
        // The stream's last sequence first: the compare-and-set on it makes the marker read
        // next the newest when the first part is stored.
        guard let state = try jetStream.streamState(layout.snapshotStreamName) else {
            throw StoreError.storageFailure("\(layout.snapshotStreamName) does not exist")
        }
        let newest = try Self.newestSnapshotMarker(jetStream: jetStream, layout: layout)
        let floor = newest?.registrySequence ?? 0
        guard appliedSequence >= floor + settings.entriesBetweenSnapshots else { return .notDue(newest: floor) }
        let snapshot = try waitForCompletion { local.readRegistrySnapshot(completion: $0) }.get()
        guard snapshot.sequence >= floor + settings.entriesBetweenSnapshots else { return .notDue(newest: floor) }

        let parts = SnapshotParts.cut(snapshot.bytes, partBytes: settings.partBytes)
        var last = state.lastSequence
        var firstPart: UInt64?
        do {
            for (index, part) in parts.enumerated() {
                guard fence.holds else { return .fenced }
                last = try publishWaiting(part, to: layout.snapshotPartSubject,
                                          headers: [RegistryLogLayout.snapshotHeader: SnapshotParts.header(index: index + 1, count: parts.count)],
                                          after: last)
                firstPart = firstPart ?? last
            }
            guard fence.holds, let firstPart else { return .fenced }
            let marker = RegistrySnapshotMarker(registrySequence: snapshot.sequence, firstPart: firstPart, parts: parts.count)
            last = try publishWaiting(marker.binaryEncoded, to: layout.snapshotMarkerSubject, headers: [:], after: last)
        } catch let error as NATSError where error.isWrongLastSequence {
            return .lostRace
        }
        compactionCounts.withLock { $0.written += 1 }
        // The earlier snapshot (and any stopped one after it) goes; then what only it covered.
        // Each purge is sent only when there is something below its sequence: on nats-server
        // 2.11.11 a purge below sequence 1 of a stream starting at 1 left it without the
        // snapshot just written (`SharedTokenRegistryTests` on the oldest server); 2.15.1
        // removed nothing.
        guard fence.holds, let firstPart else { return .compacted(sequence: snapshot.sequence, parts: parts.count, trimmedBelow: nil) }
        if state.messages > 0 { try purgeWaiting(layout.snapshotStreamName, below: firstPart) }
        guard let newest, fence.holds, let log = try jetStream.streamState(layout.streamName), log.messages > 0,
              log.firstSequence <= newest.registrySequence else {
            return .compacted(sequence: snapshot.sequence, parts: parts.count, trimmedBelow: nil)
        }
        let trimmed = try purgeWaiting(layout.streamName, below: newest.registrySequence + 1)
        compactionCounts.withLock { $0.trimmedEntries += trimmed }
        return .compacted(sequence: snapshot.sequence, parts: parts.count, trimmedBelow: newest.registrySequence + 1)
    }

    /// The marker of the newest complete snapshot, or nil before the first.
    static func newestSnapshotMarker(jetStream: any JetStreamClient, layout: RegistryLogLayout) throws -> RegistrySnapshotMarker? {
        guard let last = try jetStream.lastMessage(stream: layout.snapshotStreamName, subject: layout.snapshotMarkerSubject) else { return nil }
        return try RegistrySnapshotMarker(binaryEncoded: last.payload)
    }

    /// The newest complete snapshot, read part by part; nil before the first. A snapshot purged
    /// while it is read (a newer one was stored) is read again from the newer marker.
    static func readNewestSnapshot(jetStream: any JetStreamClient, layout: RegistryLogLayout, loop: EventLoop) throws -> RegistrySnapshot? {
        for _ in 0..<3 {
            guard let marker = try newestSnapshotMarker(jetStream: jetStream, layout: layout) else { return nil }
            if let bytes = try readParts(of: marker, jetStream: jetStream, layout: layout, loop: loop) {
                let snapshot = try RegistrySnapshot(binaryEncoded: bytes)
                guard snapshot.sequence == marker.registrySequence else {
                    throw StoreError.storageFailure("the token registry snapshot at \(marker.firstPart) holds sequence \(snapshot.sequence), its marker says \(marker.registrySequence)")
                }
                return snapshot
            }
        }
        throw StoreError.storageFailure("the newest token registry snapshot was replaced three times while this gateway read it")
    }

    /// The marker's parts joined, or nil when they are no longer all in the stream.
    private static func readParts(of marker: RegistrySnapshotMarker, jetStream: any JetStreamClient, layout: RegistryLogLayout,
                                  loop: EventLoop) throws -> [UInt8]? {
        try marker.readParts(from: layout.snapshotPartSubject, of: layout.snapshotStreamName, jetStream: jetStream, loop: loop)
    }

    /// Publishes by compare-and-set on the stream's last sequence and waits for the answer.
    private func publishWaiting(_ bytes: [UInt8], to subject: String, headers: [String: String], after last: UInt64) throws -> UInt64 {
        let answer = Mutex<Result<JetStream.Acknowledgement, NATSError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        jetStream.publish(bytes, to: subject, headers: headers, conditions: .init(expectedLastSequence: last), loop: loop) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try answer.withLock { $0! }.get().sequence
    }

    /// Purges `stream` below `sequence`; how many messages went.
    @discardableResult
    private func purgeWaiting(_ stream: String, below sequence: UInt64) throws -> UInt64 {
        let answer = Mutex<Result<UInt64, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            guard let requests = try? NATSRequests(connection: jetStream.messaging, loop: loop) else {
                answer.withLock { $0 = .failure(.storageFailure("no connection to purge \(stream)")) }
                done.signal()
                return
            }
            requests.purge(stream: stream, below: sequence, timeout: .seconds(10)) { result in
                withExtendedLifetime(requests) {
                    answer.withLock { $0 = result.mapError { .storageFailure("\($0)") } }
                    done.signal()
                }
            }
        }
        done.wait()
        return try answer.withLock { $0! }.get()
    }
}
