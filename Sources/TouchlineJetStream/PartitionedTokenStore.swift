import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// ``PersonalStoreWriter`` for gateways on a cluster whose token registry is partitioned
/// (docs/cluster.md, "The partitioned token registry"): a list's registry operations go to
/// their partitions through ``PartitionedRegistry`` (logged by each partition's owner, here or
/// on another gateway), the rest of the personal side (jobs, dead letters, idempotency keys, the
/// outbox) to the gateway's own SQLite file, in the order every cluster personal store keeps
/// (``RegistryListQueue``).
///
/// - **Durability**: a list's registry part is durable once every partition's owner logged and
///   applied its part; then its file part commits.
/// - **All-or-nothing, but for the storage**: as ``SharedTokenRegistry``'s. A registry part
///   whose partitions were logged in part is repeated whole by the caller's retry, with the
///   same outcome (every registry operation is idempotent).
///
/// Lists complete on `loop` (the cluster node's store loop).
public final class PartitionedTokenStore: PersonalStoreWriter, @unchecked Sendable {
    public let registry: PartitionedRegistry
    private let queue: RegistryListQueue

    public init(registry: PartitionedRegistry, local: StoreWriter, loop: EventLoop, clock: any WallClock) {
        self.registry = registry
        queue = RegistryListQueue(local: local, loop: loop, clock: clock)
    }

    /// The file's: a partition the cluster refuses fails its own list only, and the cluster's
    /// state shows in the channel store's health and the connection's readiness.
    public var health: StoreHealth { queue.local.health }
    public var isOpen: Bool { queue.isOpen }
    public var queueDepth: Int { queue.queueDepth }
    public var statistics: StoreWriterStatistics { queue.statistics }

    /// Refuses later lists, waits for the submitted ones, stops serving the partitions held
    /// here (keeping their files) and closes the gateway's file. Blocking: off the loop.
    public func close() {
        queue.closeAndWait()
        registry.close()
        queue.local.close()
    }

    public func submit(summarizing operations: [TokenOperation],
                       completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        queue.submit(operations, completion: completion) { [registry, queue] entry, list in
            registry.log(entry.operations) { result in
                queue.loop.execute { queue.registryDone(list, result) }
            }
        }
    }
}
