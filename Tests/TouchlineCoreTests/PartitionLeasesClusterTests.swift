import Testing
import TouchlineCore

/// Whole clusters of ``PartitionLeases`` in virtual time (``LeaseSimulation``): convergence,
/// failover, isolation, shutdown, joining, and the one property everything else serves: no
/// partition ever has two instances allowed to push at the same instant.
@Suite("Partition leases in a cluster")
struct PartitionLeasesClusterTests {
    static let partitionCount = 64

    static func holders(_ simulation: LeaseSimulation, of partitions: [Int]) -> [Int: Int] {
        var holder: [Int: Int] = [:]
        for (index, held) in simulation.holdings() { for partition in held where partitions.contains(partition) { holder[partition] = index } }
        return holder
    }

    // MARK: Convergence

    /// From a cold start of every instance at once: every partition owned, nobody above ⌈P/N⌉,
    /// within 10 s of virtual time, and then nothing moves.
    @Test(arguments: [1, 2, 3, 5, 8, 16, 63, 64])
    func aColdClusterConvergesToEveryPartitionOwnedWithinTheCeiling(instances: Int) throws {
        let wall = ContinuousClock.now
        var simulation = LeaseSimulation(settings: try LeaseSettings(partitionCount: Self.partitionCount), seed: UInt64(instances))
        simulation.start(count: instances)
        let took = simulation.run(until: \.isBalanced, within: .seconds(10))
        #expect(took != nil, "not balanced after 10 s: \(simulation.summary)")
        let moves = simulation.moves
        simulation.run(for: .seconds(5))
        #expect(simulation.isBalanced, "\(simulation.summary)")
        #expect(simulation.moves == moves, "partitions moved in a stable cluster")
        #expect(simulation.failures.isEmpty, "\(simulation.failures)")
        print("converge \(instances): \(took.map { "\($0)" } ?? "never"), moves \(moves), wall \(ContinuousClock.now - wall) \(simulation.counts)")
    }
}
