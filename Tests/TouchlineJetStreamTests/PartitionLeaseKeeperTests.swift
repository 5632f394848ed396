import Foundation
import NATS
import Synchronization
import Testing
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineTesting

/// Partition leases on a real 3-node cluster: three gateways' keepers, each on its own loop and
/// connection, share 16 partitions; one crashes, one leaves.
@Suite("Partition leases on a real cluster", .serialized)
struct PartitionLeaseKeeperTests {
    static let settings = try! LeaseSettings(partitionCount: 16)

    @Test func threeGatewaysShareThePartitionsAndACrashedOnesMoveWithinTheLeaseTime() async throws {
        let cluster = try await NATSCluster.start()
        let gateways = try (1...3).map { try Gateway(cluster: cluster, name: "g\($0)") }
        let watcher = FenceWatcher(gateways)
        try await watcher.until(within: .seconds(20), "every partition owned, at most 6 each") { owned in
            owned.values.reduce(0) { $0 + $1.count } == 16 && owned.values.allSatisfy { $0.count <= 6 }
        }
        let crashed = gateways[0]
        let itsPartitions = try crashed.loop.sync { crashed.keeper.ownedPartitions }
        try crashed.loop.sync { crashed.keeper.abandon() }
        let crashedAt = ContinuousClock.now
        try await watcher.until(within: .seconds(12), "the crashed gateway's partitions owned by the others") { owned in
            Set(owned["g2", default: []]).union(owned["g3", default: []]) == Set(0..<16)
        }
        let handover = ContinuousClock.now - crashedAt
        #expect(handover < Self.settings.leaseTTL + .seconds(3), "handover took \(handover)")
        #expect(!itsPartitions.isEmpty)
        #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
        watcher.stop()
    }

    @Test func aGatewayThatLeavesHandsItsPartitionsOverWithoutWaitingForTheLeaseTime() async throws {
        let cluster = try await NATSCluster.start()
        let gateways = try (1...2).map { try Gateway(cluster: cluster, name: "g\($0)") }
        let watcher = FenceWatcher(gateways)
        try await watcher.until(within: .seconds(20), "both gateways hold 8") { owned in
            owned["g1", default: []].count == 8 && owned["g2", default: []].count == 8
        }
        let leftAt = ContinuousClock.now
        try gateways[0].loop.sync { gateways[0].keeper.shutdown() }
        try await watcher.until(within: .seconds(10), "g2 holds all 16") { owned in owned["g2", default: []].count == 16 }
        let handover = ContinuousClock.now - leftAt
        #expect(handover < Self.settings.leaseTTL, "a graceful handover took \(handover), as long as a crash")
        #expect(gateways[0].events.entries.withLock { $0.last } == .left)
        #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
        watcher.stop()
    }
}

/// One gateway's lease keeper on a connection and loop of its own.
private final class Gateway: @unchecked Sendable {
    let name: String
    let loop: EventLoop
    let connection: NATSConnection
    let keeper: PartitionLeaseKeeper
    let events = OwnershipLog()

    init(cluster: NATSCluster, name: String) throws {
        self.name = name
        loop = EventLoop.start(name: "lease-\(name)")
        connection = try cluster.connect(name: name, loop: loop)
        let events = events
        keeper = try PartitionLeaseKeeper.make(jetStream: try JetStream(connection), bucket: "leases", replicas: 3,
                                               instance: InstanceID(name)!, settings: PartitionLeaseKeeperTests.settings,
                                               loop: loop) { ownership in events.entries.withLock { $0.append(ownership) } }
        try loop.sync { [keeper] in try keeper.start() }
    }

    deinit {
        connection.close()
        loop.stop()
    }

    /// The partitions this gateway may act for now (its fences), read on its loop.
    func fenced() -> [Int] {
        (try? loop.sync { [keeper] in (0..<16).filter { keeper.fence(for: $0) != nil } }) ?? []
    }
}

/// What a keeper told its gateway, in order.
private final class OwnershipLog: Sendable {
    let entries = Mutex<[PartitionLeaseKeeper.Ownership]>([])
}

/// Samples every gateway's fences every 20 ms, records any partition two gateways may act for
/// at once, and waits for conditions on who holds what.
private final class FenceWatcher: Sendable {
    private let gateways: [Gateway]
    private let state = Mutex<(owned: [String: [Int]], violations: [String], running: Bool)>(([:], [], true))

    init(_ gateways: [Gateway]) {
        self.gateways = gateways
        Thread { [self] in
            while state.withLock({ $0.running }) {
                let owned = Dictionary(uniqueKeysWithValues: gateways.map { ($0.name, $0.fenced()) })
                var holders: [Int: [String]] = [:]
                for (name, partitions) in owned { for partition in partitions { holders[partition, default: []].append(name) } }
                let doubled = holders.filter { $0.value.count > 1 }.map { "\($0.key): \($0.value.sorted())" }
                state.withLock { $0.owned = owned; $0.violations += doubled }
                usleep(20_000)
            }
        }.start()
    }

    var violations: [String] { state.withLock { $0.violations } }

    func stop() { state.withLock { $0.running = false } }

    func until(within limit: Duration, _ what: String, _ condition: @escaping ([String: [Int]]) -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition(state.withLock { $0.owned }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("not within \(limit): \(what); holding \(state.withLock { $0.owned })")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
