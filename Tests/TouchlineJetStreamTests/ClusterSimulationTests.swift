import TestSlots
import Testing
import TouchlineCore

/// Gateways on a cluster in virtual time under every fault at once (``ClusterSimulation``),
/// seed after seed; and the negative controls: with one fence taken out, the same simulation
/// catches it.
///
/// Each test case keeps a CPU busy for seconds: one at a time, holding one CPU's share of the
/// heavy slots, so the tests that time real clusters beside it keep theirs.
@Suite("Cluster simulation", .serialized, .heavy(weight: 4))
struct ClusterSimulationTests {
    static let seedsPerBlock: UInt64 = 50
    /// Each seed: this long of faults, then this long for the cluster to settle (long enough for
    /// a provider's longest wait and a slice run from its start).
    static let chaos = Duration.seconds(24), settle = Duration.seconds(16)

    /// A seed's cluster and faults: 2 to 4 gateways, 4 to 8 partitions, 6 to 12 channels; up
    /// to 3 % of messages lost, delays up to 40 ms, publishes held in the link and pushes held
    /// before their socket write for seconds, publishes repeated, clocks up to 5 % apart, the
    /// servers of either version's order of checks, providers waiting 1 to 10 s for an answer,
    /// links cut as an owner takes a channel's last event.
    ///
    /// `aimed`: the window of a quiet partition alone: two gateways, one channel per partition,
    /// each partition's match ending during the faults, the owner's link cut (and the owner
    /// stopped) as it takes the last event, providers that wait 10 s for their answer, and no
    /// other fault.
    static func simulation(seed: UInt64, removing removed: ClusterSimulation.Removed = [], aimed: Bool = false) throws -> ClusterSimulation {
        var dice = SplitMix64(seed: seed ^ 0x5EED)
        var faults = ClusterSimulation.Faults()
        faults.delay = .milliseconds(1) ... .milliseconds(Int64(5 + dice.next() % 36))
        faults.dropRate = dice.unit() * 0.03
        faults.linkHoldRate = dice.unit() * 0.02
        faults.duplicateRate = dice.unit() * 0.05
        faults.pushHoldRate = dice.unit() * 0.02
        faults.maximumDrift = dice.unit() * 0.05
        faults.idCheckedFirst = dice.next() % 2 == 0
        faults.aimedCutRate = dice.unit() * 0.5
        faults.clientTimeout = .milliseconds(Int64(1_000 + dice.next() % 9_000))
        faults.pauseWithCutRate = dice.unit()
        faults.quietPartitionRate = dice.unit()
        if aimed {
            faults.aimedCutRate = 1
            faults.pauseWithCutRate = 1
            faults.clientTimeout = .seconds(10)
            faults.quietPartitionRate = 1
            faults.scheduled = false
        }
        let partitions = 4 + Int(dice.next() % 5)
        // Aimed: one channel per partition, so nothing else is written to a quiet one.
        let channels = aimed ? partitions : 6 + Int(dice.next() % 7)
        let gateways = aimed ? 2 : 2 + Int(dice.next() % 3)
        return try ClusterSimulation(gateways: gateways, partitions: partitions, channels: channels, tokensPerSlice: 300, faults: faults,
                                     removed: removed, seed: seed)
    }

    /// Runs `seeds`: the failures of each seed that failed, and what happened in all of them.
    static func run(_ seeds: Range<UInt64>, removing removed: ClusterSimulation.Removed = [],
                    aimed: Bool = false) throws -> (failed: [UInt64: [String]], total: ClusterSimulation.Statistics) {
        var failed: [UInt64: [String]] = [:]
        var total = ClusterSimulation.Statistics()
        for seed in seeds {
            var simulation = try simulation(seed: seed, removing: removed, aimed: aimed)
            let failures = simulation.run(chaos: Self.chaos, settle: Self.settle)
            if !failures.isEmpty { failed[seed] = failures + [simulation.summary, "\(simulation.statistics)"] }
            total.add(simulation.statistics)
        }
        return (failed, total)
    }

    static func firstFailure(of failed: [UInt64: [String]]) -> String {
        failed.min { $0.key < $1.key }.map { "seed \($0.key): \($0.value)" } ?? ""
    }

    static func seeds(of block: UInt64) -> Range<UInt64> { block * seedsPerBlock ..< (block + 1) * seedsPerBlock }

    // MARK: Every fence in place

    /// 1,000 seeds of every fault at once: every invariant holds on each.
    @Test(arguments: UInt64(0)..<20)
    func everyInvariantHoldsUnderEveryFault(block: UInt64) throws {
        let (failed, total) = try Self.run(Self.seeds(of: block))
        #expect(failed.isEmpty, "\(failed.count) seeds failed, the first: \(Self.firstFailure(of: failed))")
        // The faults happened and reached the windows: deposed owners' pushes withheld at the
        // socket, slices taken over mid-run.
        #expect(total.pauses > 0 && total.kills > 0 && total.isolations > 0 && total.cutLinks > 0, "\(total)")
        #expect(total.withheld > 0 && total.tokensSentTwice > 0 && total.takeovers > Int(Self.seedsPerBlock), "\(total)")
    }

    /// 500 seeds aimed at a quiet partition's last event: every invariant holds on each.
    @Test(arguments: UInt64(0)..<10)
    func everyInvariantHoldsWithTheLinkCutAsAQuietPartitionTakesItsLastEvent(block: UInt64) throws {
        let (failed, total) = try Self.run(Self.seeds(of: block), aimed: true)
        #expect(failed.isEmpty, "\(failed.count) seeds failed, the first: \(Self.firstFailure(of: failed))")
        // The window was reached: events a deposed owner acknowledged (its write stored before
        // the new owner's takeover record) and writes refused after it.
        #expect(total.cutLinks > 0 && total.acknowledgedByADeposedOwner > 0 && total.refusedWrites > 0, "\(total)")
    }

    /// A seed is a run: the same seed twice gives the same run, so a failing seed can be replayed.
    @Test func aSeedRunsTheSameEachTime() throws {
        var first = try Self.simulation(seed: 7), second = try Self.simulation(seed: 7)
        #expect(first.run(chaos: Self.chaos, settle: Self.settle) == second.run(chaos: Self.chaos, settle: Self.settle))
        #expect("\(first.statistics)" == "\(second.statistics)")
        #expect(first.statistics.takeovers > 0 && first.statistics.pushes > 0, "\(first.statistics)")
    }

    // MARK: Negative controls

    /// Pushes not checked at their socket write: a paused or cut-off owner's queued pushes reach
    /// APNs after the new owner's.
    @Test func withoutTheFenceAtTheSocketADeposedOwnersPushesReachAPNs() throws {
        let failed = try Self.run(0..<100, removing: .pushFence).failed
        #expect(failed.count >= 50, "caught in \(failed.count) of 100 seeds")
        for (seed, failures) in failed {
            #expect(failures.contains { $0.contains("pushed under fence") || $0.contains("after") }, "seed \(seed): \(failures)")
        }
    }

    /// No takeover records: an owner's write waiting in a cut link is stored after the new
    /// owner read the log, acknowledged, and on a quiet partition never pushed.
    @Test func withoutTakeoverRecordsAnAcknowledgedEventOfAQuietPartitionIsNeverPushed() throws {
        let failed = try Self.run(0..<100, removing: .takeoverRecord, aimed: true).failed
        #expect(failed.count >= 10, "caught in \(failed.count) of 100 seeds")
        for (seed, failures) in failed {
            #expect(failures.contains { $0.contains("the log's newest state is") }, "seed \(seed): \(failures)")
        }
    }

    /// Saves stored over whatever is there: a deposed owner's late save moves a checkpoint back.
    @Test func withoutTheCheckpointsCompareAndSetASavedSliceGoesBack() throws {
        let failed = try Self.run(0..<100, removing: .checkpointCompareAndSet).failed
        #expect(failed.count >= 10, "caught in \(failed.count) of 100 seeds")
        for (seed, failures) in failed {
            #expect(failures.contains { $0.contains("checkpoint went back") }, "seed \(seed): \(failures)")
        }
    }
}

