import Testing
import ClusterSimulations
import TouchlineCore

/// Whole clusters of ``PartitionLeases`` in virtual time (``LeaseSimulation``): convergence,
/// failover, isolation, shutdown, joining, and the property everything else serves: no
/// partition ever has two instances allowed to push at the same instant.
@Suite("Partition leases in a cluster")
struct PartitionLeasesClusterTests {
    static let partitionCount = 64

    static func settings() throws -> LeaseSettings { try LeaseSettings(partitionCount: partitionCount) }

    /// A cluster of `count` instances (`i0`...) that has converged and then run another 2 s.
    static func settled(_ count: Int, seed: UInt64) throws -> LeaseSimulation {
        var simulation = LeaseSimulation(settings: try settings(), seed: seed)
        simulation.start(count: count)
        #expect(simulation.run(until: { $0.isBalanced }, within: .seconds(10)) != nil, "not balanced: \(simulation.summary)")
        simulation.run(for: .seconds(2))
        return simulation
    }

    // MARK: Convergence

    /// From a cold start of every instance at once: every partition owned, nobody above ⌈P/N⌉,
    /// within 2 s of virtual time; then nothing moves for a lease TTL and more.
    @Test(arguments: [1, 2, 3, 5, 8, 16, 63, 64])
    func aColdClusterConvergesToEveryPartitionOwnedWithinTheCeiling(instances: Int) throws {
        let settings = try Self.settings()
        var simulation = LeaseSimulation(settings: settings, seed: UInt64(instances))
        simulation.start(count: instances)
        let took = simulation.run(until: { $0.isBalanced }, within: .seconds(2))
        #expect(took != nil, "not balanced after 2 s: \(simulation.summary)")
        let moves = simulation.moves
        simulation.run(for: settings.leaseTTL + settings.renewInterval)
        #expect(simulation.isBalanced, "\(simulation.summary)")
        #expect(simulation.moves == moves, "partitions moved in a stable cluster")
        #expect(simulation.failures.isEmpty, "\(simulation.failures)")
    }

    // MARK: Failover

    /// A killed instance's partitions are all owned by the others, in balance, within leaseTTL
    /// + 1 s of the kill (its last renewal was seen up to a renew interval before), and not
    /// before leaseTTL − renewInterval: nobody took over early.
    @Test func aKilledInstancesPartitionsAreTakenOverWithinTheLeaseTTLAndASecond() throws {
        let settings = try Self.settings()
        var simulation = try Self.settled(5, seed: 11)
        let victim = 2
        let lost = simulation.holdings()[victim] ?? []
        #expect(lost.count >= 12)
        simulation.kill(victim)
        let taken = simulation.run(until: { simulation in
            let holdings = simulation.holdings()
            return lost.allSatisfy { partition in holdings.contains { $0.key != victim && $0.value.contains(partition) } }
        }, within: .seconds(10))
        let balanced = simulation.run(until: { $0.isBalanced }, within: .seconds(10)).map { $0 + (taken ?? .zero) }
        #expect(taken.map { $0 >= settings.leaseTTL - settings.renewInterval } ?? false, "taken after \(String(describing: taken))")
        #expect(balanced.map { $0 <= settings.leaseTTL + .seconds(1) } ?? false, "balanced after \(String(describing: balanced))")
        #expect(simulation.failures.isEmpty, "\(simulation.failures)")
    }

    /// An owner cut off from the bucket (its renewals fail) loses every fence by the send time of
    /// its last stored renewal + leaseTTL − safetyMargin, which is before the isolation plus
    /// that; each of its partitions goes to another instance only after; and its fences stay
    /// nil while it is isolated.
    @Test func anIsolatedOwnerStopsBeforeItsLeasesCanBeTakenOverAndStaysStopped() throws {
        let settings = try Self.settings()
        var simulation = try Self.settled(3, seed: 5)
        let victim = 0
        let held = simulation.holdings()[victim] ?? []
        #expect(held.count >= 21)
        simulation.isolate(victim)
        var fencesEnded: Duration?
        var takenOver: [Int: Duration] = [:]
        var elapsed = Duration.zero
        while elapsed < .seconds(8) {
            simulation.run(for: .milliseconds(10))
            elapsed += .milliseconds(10)
            let holdings = simulation.holdings()
            if holdings[victim]?.isEmpty ?? true {
                if fencesEnded == nil { fencesEnded = elapsed }
            } else if fencesEnded != nil {
                Issue.record("\(holdings[victim] ?? []) has a fence again at \(elapsed) while isolated")
            }
            for partition in held where takenOver[partition] == nil && holdings.contains(where: { $0.key != victim && $0.value.contains(partition) }) {
                takenOver[partition] = elapsed
            }
        }
        let ended = try #require(fencesEnded)
        #expect(ended <= settings.leaseTTL - settings.safetyMargin + .milliseconds(10))
        #expect(takenOver.count == held.count)
        #expect(takenOver.values.allSatisfy { $0 > ended })
        #expect(simulation.instances[victim].owns.allSatisfy { !$0 }, "no stopOwning for some partitions")
        #expect(simulation.isBalanced, "\(simulation.summary)")
        #expect(simulation.failures.isEmpty, "\(simulation.failures)")
    }

    // MARK: Leaving and joining

    /// A shutdown stops, deletes its heartbeat and leases, and the others own its partitions
    /// within half a second, far sooner than the 3 s TTL; only its partitions move.
    @Test func aGracefulShutdownHandsItsPartitionsOverWellBeforeTheTTL() throws {
        var simulation = try Self.settled(4, seed: 3)
        let leaving = 0
        let held = simulation.holdings()[leaving] ?? []
        let moves = simulation.moves
        simulation.shutdown(leaving)
        #expect(simulation.holdings()[leaving]?.isEmpty ?? false, "still holds fences right after the shutdown")
        let took = simulation.run(until: { $0.isBalanced && $0.instances[leaving].shutdownCompletedAt != nil }, within: .seconds(5))
        #expect(took.map { $0 < .milliseconds(500) } ?? false, "took \(String(describing: took))")
        #expect(simulation.moves - moves == held.count)
        #expect(simulation.instances[leaving].leases.phase == .left)
        #expect(simulation.failures.isEmpty, "\(simulation.failures)")
    }

    /// A joining instance ends with its ⌊P/N⌋, taken from the others, and little else moves:
    /// at most one partition per instance beyond what the joiner takes. From 16 to 17 every
    /// member is already at ⌈64/17⌉ = 4, so a rule of "never above ⌈P/N⌉" alone would leave the
    /// joiner with nothing.
    @Test(arguments: [1, 3, 16])
    func aJoiningInstanceTakesAFairShareAndLittleElseMoves(members: Int) throws {
        var simulation = try Self.settled(members, seed: UInt64(members) + 100)
        let moves = simulation.moves
        let joiner = simulation.start("joiner")
        let fairShare = Self.partitionCount / (members + 1)
        let took = simulation.run(until: { $0.isBalanced && $0.holdings()[joiner]?.count ?? 0 >= fairShare }, within: .seconds(10))
        #expect(took != nil, "\(simulation.summary)")
        let moved = simulation.moves - moves
        #expect(moved >= fairShare && moved <= fairShare + members, "\(moved) moves")
        simulation.run(for: .seconds(4))
        #expect(simulation.moves - moves == moved, "moves went on after the join settled")
        #expect(simulation.failures.isEmpty, "\(simulation.failures)")
    }

    /// An instance that restarts under the same name (a new run) owns nothing until it wins a
    /// compare-and-set; its earlier run's partitions are taken over once they expire, and the
    /// balance comes back with it in.
    @Test func aRestartedInstanceLearnsItOwnsNothingAndRejoins() throws {
        var simulation = try Self.settled(3, seed: 21)
        let restarted = 1
        simulation.restart(restarted)
        #expect(simulation.holdings()[restarted]?.isEmpty ?? false)
        #expect(simulation.run(until: { $0.isBalanced }, within: .seconds(8)) != nil, "\(simulation.summary)")
        #expect(simulation.holdings()[restarted]?.count ?? 0 >= 21)
        #expect(simulation.failures.isEmpty, "\(simulation.failures)")
    }

    // MARK: Safety

    /// Random delays (some past the write timeout, so answers come late), lost messages, clocks
    /// drifting by up to 5 % (the 500 ms margin covers 8 %), isolation, kills, restarts and
    /// shutdowns, over 200 seeds: never two fences for one partition at the same virtual
    /// instant (checked after every event, with every other invariant of the simulation). Then
    /// with the faults gone, everybody back and every watch started again (a watch that lost
    /// messages recovers that way), the cluster settles again.
    @Test(arguments: 0..<8)
    func noPartitionEverHasTwoFencesAtTheSameInstant(batch: UInt64) throws {
        try Self.checkChaos(seeds: batch * 25 ..< (batch + 1) * 25, mixedTimings: false)
    }

    /// The same with the instances on three lease timings (1.5 s, 3 s and 6 s TTLs, the other
    /// durations in proportion), as while a cluster's timing is changed one gateway at a time:
    /// each waits the TTL a lease's record names, so a short-TTL observer never takes over from
    /// a long-TTL owner early.
    @Test(arguments: 0..<4)
    func noPartitionEverHasTwoFencesAtTheSameInstantWhenTheInstancesHaveDifferentTimings(batch: UInt64) throws {
        try Self.checkChaos(seeds: 1_000 + batch * 25 ..< 1_000 + (batch + 1) * 25, mixedTimings: true)
    }

    static func checkChaos(seeds: Range<UInt64>, mixedTimings: Bool) throws {
        for seed in seeds {
            var simulation = try Self.chaos(seed: seed, mixedTimings: mixedTimings)
            #expect(simulation.failures.isEmpty, "seed \(seed): \(simulation.failures)")
            simulation.faults = LeaseSimulation.Faults()
            for index in simulation.instances.indices {
                switch simulation.instances[index].connection {
                case .isolated: simulation.heal(index)
                case .killed: simulation.restart(index)
                case .up:
                    if simulation.instances[index].leases.phase == .left { simulation.restart(index) } else { simulation.resubscribe(index) }
                }
            }
            #expect(simulation.run(until: { $0.isBalanced }, within: .seconds(10)) != nil, "seed \(seed): \(simulation.summary)")
            #expect(simulation.failures.isEmpty, "seed \(seed): \(simulation.failures)")
        }
    }

    /// 8 partitions, 4 instances, 12 faults over about 11 s, then 3 s more. `mixedTimings`: the
    /// instances' lease TTLs are 3 s, 1.5 s, 6 s and 3 s.
    static func chaos(seed: UInt64, mixedTimings: Bool = false) throws -> LeaseSimulation {
        let faults = LeaseSimulation.Faults(delay: .milliseconds(1) ... .milliseconds(700), dropRate: 0.05, maximumDrift: 0.05,
                                            tickLateness: .milliseconds(50))
        var simulation = LeaseSimulation(settings: try LeaseSettings(partitionCount: 8), faults: faults, seed: seed)
        simulation.checksEveryFence = true
        if mixedTimings {
            for (number, ttl) in [Int64(3_000), 1_500, 6_000, 3_000].enumerated() {
                simulation.start("i\(number)", timing: try Self.timing(partitionCount: 8, ttlMilliseconds: ttl))
            }
        } else {
            simulation.start(count: 4)
        }
        for _ in 0..<12 {
            simulation.run(for: .milliseconds(300 + Int64(simulation.pick(0..<1200))))
            let index = simulation.pick(simulation.instances.indices)
            switch (simulation.pick(0..<6), simulation.instances[index].connection) {
            case (0, .up), (1, .up): simulation.isolate(index)
            case (_, .isolated): simulation.heal(index)
            case (2, .up): simulation.kill(index)
            case (_, .killed), (3, .up): simulation.restart(index)
            case (4, .up): simulation.shutdown(index)
            default: break
            }
        }
        simulation.run(for: .seconds(3))
        return simulation
    }

    /// Lease settings with `ttlMilliseconds` and the other durations in the defaults' proportions.
    static func timing(partitionCount: Int, ttlMilliseconds ttl: Int64) throws -> LeaseSettings {
        try LeaseSettings(partitionCount: partitionCount, leaseTTL: .milliseconds(ttl), renewInterval: .milliseconds(ttl / 3),
                          safetyMargin: .milliseconds(ttl / 6), memberTTL: .milliseconds(ttl), writeTimeout: .milliseconds(ttl / 6),
                          retryDelay: .milliseconds(ttl / 12))
    }

    /// The check above can fail: with clocks 30 % apart (the owner's slow, the observer's fast),
    /// far beyond what the margin covers, the observer takes over while the isolated owner
    /// still holds its fence, and the simulation reports it.
    @Test func clocksFurtherApartThanTheMarginCoversAreCaught() throws {
        var simulation = LeaseSimulation(settings: try LeaseSettings(partitionCount: 4), seed: 1)
        let owner = simulation.start("owner", clockRate: 0.7)
        #expect(simulation.run(until: { $0.isBalanced }, within: .seconds(2)) != nil)
        simulation.start("observer", clockRate: 1.3)
        simulation.run(for: .seconds(3))
        simulation.isolate(owner)
        simulation.run(for: .seconds(6))
        #expect(simulation.failures.contains { $0.contains("at the same instant") }, "\(simulation.failures)")
    }
}
