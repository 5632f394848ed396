import TouchlineCore

/// What a store writer tells about itself (``DurableStoreWriter``'s properties), kept by the
/// same rules in every writer that holds it in memory (the test store, the JetStream store):
/// a write is admitted until close, counted while queued, and its outcome moves the statistics
/// and the health (a storage failure makes it failing from that moment, a success healthy).
public struct WriterState: Sendable {
    public private(set) var closed = false
    public private(set) var queued = 0
    public var statistics = StoreWriterStatistics()
    public var health = StoreHealth.healthy

    public init() {}

    /// Counts a write in unless the writer is closed; false: refuse it with ``StoreError/closed``.
    public mutating func admit() -> Bool {
        guard !closed else { return false }
        queued += 1
        return true
    }

    /// The write left the queue to be committed.
    public mutating func started() { queued -= 1 }

    public mutating func close() { closed = true }

    public mutating func record<T>(_ result: Result<T, StoreError>, at now: UnixTime) {
        switch result {
        case .success:
            statistics.transactions += 1
            statistics.batches += 1
            health = .healthy
        case .failure(let error):
            statistics.failedBatches += 1
            if error.isStorageFailure, error != .closed {
                if health.failure == nil { health.failingSince = now }
                health.failure = error
            }
        }
    }
}
