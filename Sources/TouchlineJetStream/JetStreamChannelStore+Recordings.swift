import Dispatch
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Recorded feeds on the cluster (docs/cluster.md, "Feed recordings on the cluster"). A channel
/// that records its feed writes its events as ``StoreOperation/recordEvents(_:)``: the batch is
/// logged whole, as every batch, but its tables do not keep those events (a partition's snapshot
/// stays the size of its channels' state, whatever a recording holds). Once the batch is
/// acknowledged, each recorded event is copied to the stream of recordings, one subject per
/// channel, and the batch completes only when every copy is acknowledged too: a 202 means the
/// recording holds the event. The next write of the partition (and so its next snapshot) waits
/// for that, so no snapshot covers a batch whose copies are missing; a crash between the batch
/// and its copies is repaired by the next reader of the log, which copies again what the
/// recording lacks of the batches after the snapshot (``recopyReplayed(_:)``).
extension JetStreamChannelStore {
    /// The tables' part of a batch: all but its recorded events.
    static func forTables(_ batch: WriteBatch) -> WriteBatch {
        guard batch.operations.contains(where: \.isRecording) else { return batch }
        return WriteBatch(batch.operations.filter { !$0.isRecording })
    }

    /// The events a batch records.
    static func recordedEvents(of batch: WriteBatch) -> [StoredEvent] {
        batch.operations.flatMap { operation -> [StoredEvent] in
            if case .recordEvents(let events) = operation { events } else { [] }
        }
    }

    /// Copies `events` to the stream of recordings, all at once; `done` on the loop once every
    /// copy is acknowledged. A copy without an answer is sent again with its message id (stored
    /// once) until ``retryLimit`` has passed since `since`.
    func record(_ events: [StoredEvent], since: ContinuousClock.Instant, then done: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        guard !events.isEmpty else { return done(.success(())) }
        let copies = RecordingCopies(remaining: events.count)
        for event in events {
            jetStream.publish(event.binaryEncoded, to: layout.recordingSubject(of: event.channelID),
                              conditions: JetStream.PublishConditions(messageID: Self.recordingID(of: event)), loop: loop) { [self] result in
                if case .failure(let error) = result { copies.failed.append((event, error)) }
                copies.remaining -= 1
                guard copies.remaining == 0 else { return }
                guard let (_, error) = copies.failed.first else { return done(.success(())) }
                guard error.jetStreamCode == 0, ContinuousClock.now - since < Self.retryLimit else {
                    return done(.failure(.storageFailure("the cluster did not store \(copies.failed.count) recorded events: \(error)")))
                }
                let again = copies.failed.map(\.event)
                let timer = LoopTimer(loop: loop) { [self] in record(again, since: since, then: done) }
                copies.retry = timer
                timer.schedule(after: .milliseconds(100))
            }
        }
    }

    /// A recorded event's message id: the same for every copy of it, so a copy sent again
    /// (after a lost answer, or by a repair) within the stream's duplicate window is stored once.
    static func recordingID(of event: StoredEvent) -> String {
        "rec:\(event.channelID):\(event.seq):\(event.receivedAt.nanoseconds)"
    }

    /// Blocking, from the replaying thread: copies again the recorded events of the batches
    /// replayed since the partition's last snapshot that the recording of their channel lacks
    /// (its last copy has a lower `seq`: a crash came between a batch and its copies). Events of
    /// channels deleted since are left out.
    func recopyReplayed(_ log: ChannelLogLayout.Log) throws {
        let replayed = try loop.sync { [self] () -> [StoredEvent] in
            let events = replayedRecordings.removeValue(forKey: log) ?? []
            let existing = committed.tables.withLock { tables in Set(events.map(\.channelID).filter { tables.channels[$0] != nil }) }
            return events.filter { existing.contains($0.channelID) }
        }
        guard !replayed.isEmpty else { return }
        var missing: [StoredEvent] = []
        for (channelID, events) in Dictionary(grouping: replayed, by: \.channelID) {
            let subject = layout.recordingSubject(of: channelID)
            let last = try JetStream.retryingWhileForming { () throws(NATSError) in
                try jetStream.lastMessage(stream: layout.recordingsStreamName, subject: subject)
            }
            let lastSeq = last.flatMap { try? StoredEvent(binaryEncoded: $0.payload) }?.seq ?? .min
            missing += events.filter { $0.seq > lastSeq }
        }
        guard !missing.isEmpty else { return }
        let copies = missing
        let copied = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Void, StoreError>?>(nil)
        loop.execute { [self] in
            record(copies, since: .now) { result in
                outcome.withLock { $0 = result }
                copied.signal()
            }
        }
        copied.wait()
        if case .failure(let error)? = outcome.withLock({ $0 }) { throw error }
    }

    /// Removes a deleted channel's recording (not waited for; a recording left by a failure is
    /// never read: an export reads only what came after its channel's creation).
    func forgetRecordings(of batch: WriteBatch) {
        for case .deleteChannel(let channelID) in batch.operations {
            apiRequests?.purge(stream: layout.recordingsStreamName, subject: layout.recordingSubject(of: channelID), timeout: .seconds(5)) { _ in }
        }
    }

    // MARK: Reading

    /// How many events the recording of `channelID` holds (blocking; never on the loop).
    public func recordedEventCount(of channelID: String) throws -> Int {
        Int(try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.messageCount(stream: layout.recordingsStreamName, subject: layout.recordingSubject(of: channelID))
        })
    }

    /// The recorded events of `channelID` received at `since` or later (the channel's creation:
    /// a recording left by a deleted channel of the same id is not its), each once, in `seq`
    /// order, at most `limit` (blocking; never on the loop).
    public func recordedEvents(of channelID: String, since: UnixTime, limit: Int) throws -> [StoredEvent] {
        let stored = try recordedEventCount(of: channelID)
        guard stored > 0 else { return [] }
        let read = Mutex<(events: [Int64: StoredEvent], delivered: Int, damaged: String?)>(([:], 0, nil))
        let caughtUp = DispatchSemaphore(value: 0)
        let subscription = try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.subscribeOrdered(to: layout.recordingSubject(of: channelID), from: .all, loop: loop) { message in
                let done = read.withLock { state -> Bool in
                    state.delivered += 1
                    do {
                        let event = try StoredEvent(binaryEncoded: message.payload)
                        if event.receivedAt >= since, state.events[event.seq] == nil { state.events[event.seq] = event }
                    } catch {
                        state.damaged = state.damaged ?? "recording of \(channelID), stream sequence \(message.stream?.sequence ?? 0): \(error)"
                    }
                    return state.delivered >= stored || message.stream?.pending == 0
                }
                if done { caughtUp.signal() }
            }
        }
        defer { subscription.cancel() }
        var seen = 0
        while caughtUp.wait(timeout: .now() + .seconds(Int(Self.replayStall.components.seconds))) == .timedOut {
            let delivered = read.withLock { $0.delivered }
            guard delivered > seen else {
                throw StoreError.storageFailure("reading the recording of \(channelID) delivered nothing for \(Self.replayStall)")
            }
            seen = delivered
        }
        let (events, damaged) = read.withLock { ($0.events, $0.damaged) }
        if let damaged { throw StoreError.refused(damaged) }
        return Array(events.values.sorted { $0.seq < $1.seq }.prefix(limit))
    }
}

/// One ``JetStreamChannelStore/record(_:since:then:)``'s copies in flight (on the store's loop).
private final class RecordingCopies: @unchecked Sendable {
    var remaining: Int
    var failed: [(event: StoredEvent, error: NATSError)] = []
    var retry: LoopTimer?

    init(remaining: Int) { self.remaining = remaining }
}

extension StoreOperation {
    var isRecording: Bool {
        if case .recordEvents = self { true } else { false }
    }
}
