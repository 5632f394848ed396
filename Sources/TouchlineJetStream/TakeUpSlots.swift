import Dispatch
import Synchronization

/// How many registry partitions a gateway reads at once while taking them up: each take-up
/// fetches its partition's newest image and log over the gateway's one NATS connection, which
/// the lease keeper's renewals share, and restores it with the writer's CPU.
///
/// A survivor taking 32 partitions of 3 million tokens up all at once had about a gigabyte of
/// images coming in ahead of its renewals: it lost its own leases, took its own partitions up
/// again, lost them again, and did not serve every partition within 120 s (docs/benchmarks.md).
/// A take-up beyond the slots waits on its partition's own queue, blocking only that queue.
public final class TakeUpSlots: Sendable {
    private let slots: DispatchSemaphore
    private let counts = Mutex((inUse: 0, peak: 0))

    public init(_ count: Int) { slots = DispatchSemaphore(value: max(1, count)) }

    /// Runs `body` once a slot is free, holding it meanwhile. Blocks.
    func whileHeld<T>(_ body: () throws -> T) throws -> T {
        slots.wait()
        counts.withLock { counts in
            counts.inUse += 1
            counts.peak = max(counts.peak, counts.inUse)
        }
        defer {
            counts.withLock { $0.inUse -= 1 }
            slots.signal()
        }
        return try body()
    }

    /// The most take-ups that held slots at once so far (tests).
    public var peak: Int { counts.withLock { $0.peak } }
}
