import Synchronization
import TouchlineCore

/// The partition leases this gateway holds, readable from any thread: for each partition, the
/// fence it holds and the instant that fence stops letting it act unless renewed. The lease
/// keeper writes it (on its loop) after every input; the last checks before a side effect's
/// bytes leave read it (``fence(of:_:)``), on the APNs loops, the personal queue's loop and the
/// store's loop.
///
/// The instant is the keeper's conservative one (a renewal's send time plus the lease's time,
/// less a safety margin), on the monotonic clock, which keeps running while the process is
/// stopped: a gateway resumed after a pause finds its holds expired before it sends anything.
public final class PartitionFences: Sendable {
    private struct Hold {
        var fence: Fence
        var until: ContinuousClock.Instant
    }

    private let holds: Mutex<[Hold?]>
    private let now: @Sendable () -> ContinuousClock.Instant
    /// The gateway's tag in its requests' ids (``FenceStamp``); nil: no ids are stamped.
    private let gateway: UInt32?
    private let serials = Atomic<UInt32>(0)

    /// `instance`: the gateway's name, whose tag goes into the id of each fenced request to APNs.
    public init(partitions: Int, instance: InstanceID? = nil, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        holds = Mutex(Array(repeating: nil, count: partitions))
        self.now = now
        gateway = instance.map(FenceStamp.tag(of:))
    }

    /// Records what the keeper holds now: `held` by partition; every other partition is held no more.
    public func update(_ held: [Int: (fence: Fence, until: ContinuousClock.Instant)]) {
        holds.withLock { holds in
            for partition in holds.indices { holds[partition] = held[partition].map { Hold(fence: $0.fence, until: $0.until) } }
        }
    }

    /// Whether `fence` still lets this gateway act for `partition` at this instant.
    public func holds(_ fence: Fence, of partition: Int) -> Bool {
        current(of: partition) == fence
    }

    /// The fence `partition` is held under now, if it is.
    public func current(of partition: Int) -> Fence? {
        let hold = holds.withLock { $0.indices.contains(partition) ? $0[partition] : nil }
        guard let hold, now() < hold.until else { return nil }
        return hold.fence
    }

    /// A new request id naming `fence` of `partition` and this gateway; nil without an instance.
    func stamp(_ fence: Fence, of partition: Int) -> String? {
        guard let gateway else { return nil }
        let serial = serials.wrappingAdd(1, ordering: .relaxed).newValue
        return FenceStamp(gateway: gateway, partition: partition, fence: fence, serial: serial).uuid
    }

    /// The check a side effect decided under `fence` carries to its last moment.
    public func fence(of partition: Int, _ fence: Fence) -> PartitionFence {
        PartitionFence(fences: self, partition: partition, fence: fence)
    }
}

/// A side effect's fence on one partition's lease (``PartitionFences``).
public struct PartitionFence: SideEffectFence, CustomStringConvertible {
    let fences: PartitionFences
    public let partition: Int
    public let fence: Fence

    public var holds: Bool { fences.holds(fence, of: partition) }

    public var requestID: String? { fences.stamp(fence, of: partition) }

    public var description: String { "partition \(partition) \(fence)" }
}
