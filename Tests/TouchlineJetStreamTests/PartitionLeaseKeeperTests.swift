import Foundation
import NATS
import NATSServers
import Synchronization
import TestSlots
import Testing
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineTesting

/// Partition leases on a 3-node cluster, real and in memory (``NATSBackend``; the real one takes
/// three heavy test slots): three gateways' keepers, each on its own loop and connection, share
/// 16 partitions; one crashes, one leaves, one is cut off.
@Suite("Partition leases on a cluster", .serialized)
struct PartitionLeaseKeeperTests {
    static let settings = try! LeaseSettings(partitionCount: 16)

    @Test(arguments: NATSBackend.allCases)
    func threeGatewaysShareThePartitionsAndACrashedOnesGoToTheOthers(backend: NATSBackend) async throws {
        try await backend.withCluster(size: 3) { cluster in
            let gateways = try (1...3).map { try Gateway(cluster: cluster, name: "g\($0)") }
            let watcher = FenceWatcher(gateways)
            try await watcher.until(within: .seconds(20), "every partition owned, at most 6 each") { owned in
                owned.values.reduce(0) { $0 + $1.count } == 16 && owned.values.allSatisfy { $0.count <= 6 }
            }
            let crashed = gateways[0]
            let itsPartitions = try crashed.loop.sync { crashed.keeper.ownedPartitions }
            try crashed.loop.sync { crashed.keeper.abandon() }
            // How soon is the lease machine's, held to leaseTTL + 1 s in virtual time
            // (`PartitionLeasesClusterTests`) and measured by `touchline-load scale-out`: a
            // wall-clock bound here measured the host (11.4 s once, in a loaded CI run).
            try await watcher.until(within: .seconds(60), "the crashed gateway's partitions owned by the others") { owned in
                Set(owned["g2", default: []]).union(owned["g3", default: []]) == Set(0..<16)
            }
            #expect(!itsPartitions.isEmpty)
            #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
            watcher.stop()
        }
    }

    /// A message of the bucket lost on its way to one keeper's watch: the next one shows the
    /// gap, the keeper holds its writes and watches anew from the last value of each key, and
    /// goes on with a complete view. Nobody's partitions move, and no two fences overlap.
    @Test func aMessageLostOnTheWayToAWatchIsNoticedAndTheViewReadAgain() async throws {
        try await NATSBackend.inMemory.withCluster(size: 3) { cluster in
            let switches = try #require(cluster.inMemory)
            let gateways = try (1...2).map { try Gateway(cluster: cluster, name: "g\($0)") }
            let watcher = FenceWatcher(gateways)
            try await watcher.until(within: .seconds(20), "both gateways hold 8") { owned in
                owned["g1", default: []].count == 8 && owned["g2", default: []].count == 8
            }
            let before = try gateways[0].loop.sync { gateways[0].keeper.ownedPartitions }
            switches.loseDeliveries(to: "g1")
            try await eventually("g1 noticed the gap", timeout: .seconds(10)) {
                (try? gateways[0].loop.sync { gateways[0].keeper.watchGaps }) == 1
            }
            // Two lease times later, g1 still renews what it held: its view is whole again.
            try await Task.sleep(for: Self.settings.leaseTTL * 2)
            #expect(try gateways[0].loop.sync { gateways[0].keeper.ownedPartitions } == before)
            #expect(try gateways[0].loop.sync { gateways[0].keeper.watchGaps } == 1)
            #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
            watcher.stop()
        }
    }

    /// Two keepers with leases of 400 ms on `cluster`, each holding 8 of the 16 partitions.
    private static func twoBalancedFastGateways(on cluster: TestNATSCluster) async throws -> ([Gateway], FenceWatcher) {
        let settings = try LeaseSettings(partitionCount: 16, leaseTTL: .milliseconds(400), renewInterval: .milliseconds(100),
                                         safetyMargin: .milliseconds(100), memberTTL: .milliseconds(400), writeTimeout: .milliseconds(100),
                                         retryDelay: .milliseconds(50))
        let gateways = try (1...2).map { try Gateway(cluster: cluster, name: "g\($0)", settings: settings) }
        let watcher = FenceWatcher(gateways)
        try await watcher.until(within: .seconds(10), "both gateways hold 8") { owned in
            owned["g1", default: []].count == 8 && owned["g2", default: []].count == 8
        }
        return (gateways, watcher)
    }

    /// A gap in one keeper's watch while the cluster does not answer its calls: the new watch
    /// cannot be made, so the keeper holds its writes and its partitions go to the other. It
    /// tries again every retry delay, and once the cluster answers it has a complete view again
    /// and takes its share back. (Without the retries it held its writes for good: seen once
    /// after a quorum loss on real servers.)
    @Test func aWatchThatCannotBeMadeAgainIsTriedUntilTheClusterAnswers() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let (gateways, watcher) = try await Self.twoBalancedFastGateways(on: cluster)
            switches.answerCalls(of: "g1", false)
            switches.loseDeliveries(to: "g1")
            try await watcher.until(within: .seconds(10), "g2 holds all 16, g1 none") { owned in
                owned["g2", default: []].count == 16 && owned["g1", default: []].isEmpty
            }
            try await eventually("g1 tried more than once", timeout: .seconds(10)) {
                (try? gateways[0].loop.sync { gateways[0].keeper.watchRenewalFailures }) ?? 0 >= 2
            }
            switches.answerCalls(of: "g1", true)
            try await watcher.until(within: .seconds(10), "both gateways hold 8 again") { owned in
                owned["g1", default: []].count == 8 && owned["g2", default: []].count == 8
            }
            #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
            watcher.stop()
        }
    }

    /// A gateway starting while the cluster does not answer its calls (busy, or electing a
    /// leader): its keeper asks for its first watch again until the cluster answers, then takes
    /// every partition. (Before, the start failed at once: seen in CI as "subscribe to
    /// $KV.leases.>: Timeout".)
    @Test func aFirstWatchTheClusterDoesNotAnswerIsAskedForAgainUntilItDoes() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let gateway = try Gateway(cluster: cluster, name: "g1") {
                switches.answerCalls(of: "g1", false)
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { switches.answerCalls(of: "g1", true) }
            }
            let watcher = FenceWatcher([gateway])
            try await watcher.until(within: .seconds(20), "g1 holds all 16") { owned in owned["g1", default: []].count == 16 }
            watcher.stop()
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aGatewayThatLeavesHandsItsPartitionsOverWithoutWaitingForTheLeaseTime(backend: NATSBackend) async throws {
        try await backend.withCluster(size: 3) { cluster in
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
            #expect(gateways[0].events.entries.withLock { $0.last?.ownership } == .left)
            #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
            watcher.stop()
        }
    }

    /// A key of the bucket no keeper writes (an operator's probe), stored after every lease:
    /// the keepers' writes, which expect the stream's last sequence, go on, and a gateway whose
    /// watch ends on that key still sees its view caught up and takes its share.
    @Test(arguments: NATSBackend.allCases)
    func aKeyOfAnyoneElseInTheBucketStopsNoWrite(backend: NATSBackend) async throws {
        try await backend.withCluster(size: 3) { cluster in
            let first = try Gateway(cluster: cluster, name: "g1")
            var watcher = FenceWatcher([first])
            try await watcher.until(within: .seconds(20), "g1 holds all 16") { owned in owned["g1", default: []].count == 16 }
            watcher.stop()
            let loop = EventLoop.start(name: "probe")
            defer { loop.stopAndWait() }
            let probe = try cluster.connect(name: "probe", loop: loop)
            let stored = DispatchSemaphore(value: 0)
            probe.publish(Array("hello".utf8), to: JetStream.keySubject(bucket: "leases", key: "probe"), loop: loop) { _ in stored.signal() }
            stored.wait()
            let second = try Gateway(cluster: cluster, name: "g2")
            watcher = FenceWatcher([first, second])
            try await watcher.until(within: .seconds(20), "both gateways hold 8") { owned in
                owned["g1", default: []].count == 8 && owned["g2", default: []].count == 8
            }
            #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
            watcher.stop()
            withExtendedLifetime(probe) {}
        }
    }

    /// The in-memory cluster cuts one gateway off (its writes time out, it sees no one's): its
    /// leases lapse and the other takes every partition, never two fences for one partition at
    /// once; healed, it gets its share back. With leases of 400 ms this runs in about a second.
    @Test func aGatewayCutOffFromTheClusterLosesItsPartitionsAndTakesItsShareBackWhenHealed() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let (_, watcher) = try await Self.twoBalancedFastGateways(on: cluster)
            switches.partition("g1")
            try await watcher.until(within: .seconds(10), "g2 holds all 16, g1 none") { owned in
                owned["g2", default: []].count == 16 && owned["g1", default: []].isEmpty
            }
            switches.heal("g1")
            try await watcher.until(within: .seconds(10), "both gateways hold 8 again") { owned in
                owned["g1", default: []].count == 8 && owned["g2", default: []].count == 8
            }
            #expect(watcher.violations.isEmpty, "partitions with two fences at once: \(watcher.violations)")
            watcher.stop()
        }
    }
}

/// One gateway's lease keeper on a connection and loop of its own.
private final class Gateway: @unchecked Sendable {
    let name: String
    let loop: EventLoop
    let keeper: PartitionLeaseKeeper
    let events = OwnershipLog()

    /// `beforeStart` runs between the bucket's creation and the keeper's start.
    init(cluster: TestNATSCluster, name: String, settings: LeaseSettings = PartitionLeaseKeeperTests.settings,
         beforeStart: () -> Void = {}) throws {
        self.name = name
        loop = EventLoop.start(name: "lease-\(name)")
        let events = events
        keeper = try PartitionLeaseKeeper.make(jetStream: try cluster.connect(name: name, loop: loop), bucket: "leases", replicas: 3,
                                               instance: InstanceID(name)!, settings: settings,
                                               loop: loop) { ownership in events.entries.withLock { $0.append((ownership, ContinuousClock.now)) } }
        beforeStart()
        try loop.sync { [keeper] in try keeper.start() }
    }

    deinit { loop.stop() }

    /// The partitions this gateway may act for, each with its fence and until when, and the
    /// instant of the reading (taken after it, so every fence was valid from then on).
    func holds() -> (at: ContinuousClock.Instant, holds: [(partition: Int, fence: Fence, until: ContinuousClock.Instant)])? {
        try? loop.sync { [keeper] in
            let holds = (0..<16).compactMap { partition in keeper.fenceHold(for: partition).map { (partition, $0.fence, $0.until) } }
            return (ContinuousClock.now, holds)
        }
    }

    /// What the keeper knows of itself, for a failure message.
    func diagnosis() -> String {
        (try? loop.sync { [keeper, name] in "\(name): \(keeper.phase), members \(keeper.liveMembers.map(\.description))" }) ?? "\(name): loop stopped"
    }
}

/// What a keeper told its gateway, in order, with when.
private final class OwnershipLog: Sendable {
    let entries = Mutex<[(ownership: PartitionLeaseKeeper.Ownership, at: ContinuousClock.Instant)]>([])
}

/// Reads every gateway's fences every 20 ms, waits for conditions on who holds what, and finds
/// partitions that two gateways could act for at the same instant.
///
/// A gateway's fence is valid from its keeper's `start` (exact: the keeper's own instant) until
/// its `stop` or until the end its readings last showed (a renewal the readings missed only
/// makes that earlier), whichever comes first. Intervals so drawn are never longer than the
/// real ones, so an overlap found is a real violation, whatever delays a busy machine puts
/// between the readings of different gateways.
private final class FenceWatcher: Sendable {
    private struct Hold: Hashable {
        let gateway: String
        let partition: Int
        let fence: Fence
    }

    private struct State {
        var owned: [String: [Int]] = [:]
        /// The latest end each fence was shown with.
        var shownUntil: [Hold: ContinuousClock.Instant] = [:]
        var running = true
    }

    private let gateways: [Gateway]
    private let state = Mutex(State())

    init(_ gateways: [Gateway]) {
        self.gateways = gateways
        Thread { [self] in
            while state.withLock({ $0.running }) {
                for gateway in gateways {
                    let reading = gateway.holds()
                    state.withLock { state in
                        state.owned[gateway.name] = reading?.holds.map(\.partition) ?? []
                        for hold in reading?.holds ?? [] {
                            let key = Hold(gateway: gateway.name, partition: hold.partition, fence: hold.fence)
                            state.shownUntil[key] = max(state.shownUntil[key] ?? hold.until, hold.until)
                        }
                    }
                }
                usleep(20_000)
            }
        }.start()
    }

    /// Partitions whose fences at two gateways were valid at a common instant.
    var violations: [String] {
        let shownUntil = state.withLock { $0.shownUntil }
        var intervals: [(hold: Hold, from: ContinuousClock.Instant, until: ContinuousClock.Instant)] = []
        for gateway in gateways {
            let entries = gateway.events.entries.withLock { $0 }
            for (index, entry) in entries.enumerated() {
                guard case .start(let partition, let fence) = entry.ownership else { continue }
                let hold = Hold(gateway: gateway.name, partition: partition, fence: fence)
                let stopped = entries[(index + 1)...].first { $0.ownership == .stop(partition: partition) || $0.ownership == .left }?.at
                guard let until = [stopped, shownUntil[hold]].compactMap({ $0 }).min() else { continue }
                intervals.append((hold, entry.at, until))
            }
        }
        var found: [String] = []
        for a in intervals {
            for b in intervals where a.hold.partition == b.hold.partition && a.hold.gateway < b.hold.gateway
                && a.from < b.until && b.from < a.until {
                found.append("partition \(a.hold.partition): \(a.hold.gateway) \(a.hold.fence) and \(b.hold.gateway) \(b.hold.fence)")
            }
        }
        return found.sorted()
    }

    func stop() { state.withLock { $0.running = false } }

    func until(within limit: Duration, _ what: String, _ condition: @escaping ([String: [Int]]) -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition(state.withLock { $0.owned }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("not within \(limit): \(what); holding \(state.withLock { $0.owned }); \(gateways.map { $0.diagnosis() })")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
