import Dispatch
import NATS
import Synchronization
import TouchlineCore
import TouchlineStore

/// Who may write a partition's log (docs/cluster.md, "What each fence protects").
///
/// A gateway granted a partition reads its log to the end and writes a **takeover record**
/// after it, by compare-and-set on the log's last sequence, before it serves the partition.
/// Every write of an earlier owner expects a sequence before the record, so none can be stored
/// after it: not one in the store's retry loop, not one in the client's reconnect buffer, not
/// one sent by a gateway paused past its lease. Whatever was stored before the record, the new
/// owner has read: a write stored between its read and its record makes the record's
/// compare-and-set fail, and the log is read again.
///
/// With ``PartitionFences``, a write to a partition's log is sent (each attempt, retries
/// included) only while the fence of the store's takeover holds.
extension JetStreamChannelStore {
    /// How many times a takeover reads the log again because a write slipped in before its record.
    static let takeoverAttempts = 20

    /// Reads `partition`'s log to its end and writes a takeover record under `fence` after it;
    /// writes to the log are then made under `fence`. Blocking: call it from a thread of its own.
    /// Throws when the fence stops holding, or the cluster refuses the record.
    public func takeOver(partition: Int, under fence: Fence) throws {
        var lastFailure: StoreError?
        for _ in 0..<Self.takeoverAttempts {
            try catchUp(partition: partition)
            let written = DispatchSemaphore(value: 0)
            let outcome = Mutex<Result<Void, StoreError>?>(nil)
            loop.execute { [self] in
                queueTakeover(of: partition, under: fence) { result in
                    outcome.withLock { $0 = result }
                    written.signal()
                }
            }
            written.wait()
            switch outcome.withLock({ $0 }) ?? .failure(.storageFailure("no answer")) {
            case .success: return
            case .failure(let error) where isStale(partition):
                // A write slipped in between the read and the record: read again.
                lastFailure = error
            case .failure(let error):
                throw error
            }
        }
        throw lastFailure ?? StoreError.storageFailure("partition \(partition): no takeover record could be written")
    }

    /// Logs the takeover record, as the log's one write in flight (on the loop).
    func writeTakeover(of partition: Int, under fence: Fence, done: @escaping @Sendable () -> Void,
                       completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        let log = ChannelLogLayout.Log.partition(partition)
        publish([], to: log, headers: [ChannelLogLayout.takeoverHeader: String(fence.revision.value)], id: nextMessageID(), since: .now,
                fence: fence) { [self] result in
            switch result {
            case .success(let sequence):
                lastSequence[log] = sequence
                takenOver[partition] = fence
                completion(.success(()))
            case .failure(let error):
                completion(.failure(error))
            }
            done()
        }
    }

    /// The fence this store writes `log` under: its takeover's for a partition log.
    func ownFence(of log: ChannelLogLayout.Log) -> Fence? {
        guard case .partition(let partition) = log else { return nil }
        return takenOver[partition]
    }

    /// Why a write to `log` under `fence` may not be sent now, or nil when it may: a partition
    /// log is written only under a fence that holds (when the store writes under leases).
    func fenceRefusal(writing log: ChannelLogLayout.Log, under fence: Fence?) -> StoreError? {
        guard let fences, case .partition(let partition) = log else { return nil }
        guard let fence else {
            return .storageFailure("partition \(partition) is not taken over by this gateway: its log is not written from here")
        }
        guard fences.holds(fence, of: partition) else {
            return .storageFailure("partition \(partition): the lease this gateway wrote its log under (\(fence)) no longer holds; the write is dropped")
        }
        return nil
    }

    /// Whether `partition`'s log is to be read again before it is written (on any thread).
    private func isStale(_ partition: Int) -> Bool {
        (try? loop.sync { [self] in stale.contains(partition) }) ?? false
    }
}
