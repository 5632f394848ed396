import Testing
import TouchlineCore

/// A channel's rules under delays, failures, restarts and moves, on many seeds
/// (``ChannelSimulation``), and the negative controls that show the simulation sees a broken rule.
@Suite("Channel simulation")
struct ChannelSimulationTests {
    typealias Machine = ChannelMachine<TestRules>

    static let seeds: ClosedRange<UInt64> = 1...2_000

    /// The first failures of `step` over `seeds` (a seed and what broke).
    static func failures(seeds: ClosedRange<UInt64>, step: @escaping ChannelSimulation.Step = { $0.handle($1, now: $2) }) -> [String] {
        var found: [String] = []
        for seed in seeds {
            var simulation = ChannelSimulation(seed: seed, step: step)
            simulation.run()
            if let failure = simulation.failures.first { found.append("seed \(seed): \(failure)") }
            if found.count >= 5 { break }
        }
        return found
    }

    @Test func everyInvariantHoldsOnTwoThousandSeeds() {
        let failures = Self.failures(seeds: Self.seeds)
        #expect(failures.isEmpty, "\(failures)")
    }

    /// The seeds go through what the checks are about: most runs roll over and see failed
    /// commits and pushes, answers held behind a write, requests refused while the store fails,
    /// operators' rollovers, crashes, lapsed leases and moves.
    @Test func theSeedsExerciseFaultsRolloversAndTheGate() {
        var totals = ChannelSimulation.Seen()
        var runsRolledOver = 0
        for seed: UInt64 in 1...200 {
            var simulation = ChannelSimulation(seed: seed)
            simulation.run()
            let seen = simulation.seen
            totals.restarts += seen.restarts
            totals.lapses += seen.lapses
            totals.moves += seen.moves
            totals.failedCommits += seen.failedCommits
            totals.failedPushes += seen.failedPushes
            totals.heldInputs += seen.heldInputs
            totals.refusedForStore += seen.refusedForStore
            totals.operatorRollovers += seen.operatorRollovers
            if seen.rollovers > 0 { runsRolledOver += 1 }
        }
        #expect(runsRolledOver >= 150, "\(runsRolledOver) of 200 runs rolled over")
        #expect(totals.restarts >= 50 && totals.lapses >= 100 && totals.moves >= 50, "\(totals)")
        #expect(totals.failedCommits >= 200 && totals.failedPushes >= 200 && totals.heldInputs >= 20, "\(totals)")
        #expect(totals.refusedForStore >= 50 && totals.operatorRollovers >= 50, "\(totals)")
    }

    /// A seed's run is the same every time: a failure can be replayed from its seed.
    @Test func aSeedReplaysTheSameRun() {
        var first = ChannelSimulation(seed: 42)
        first.run()
        var second = ChannelSimulation(seed: 42)
        second.run()
        #expect(first.steps == second.steps && first.steps > 100)
        #expect(first.now == second.now)
    }

    // MARK: Negative controls

    /// A channel that does not hear that its lease lapsed decides pushes without ownership.
    @Test func aChannelDeafToALapsedLeaseIsCaught() {
        let failures = Self.failures(seeds: Self.seeds) { machine, input, now in
            if case .ownershipChanged(.notActing) = input { return [] }
            return machine.handle(input, now: now)
        }
        #expect(failures.contains { $0.contains("did not act for the channel") }, "\(failures)")
    }

    /// A shell that acknowledges a write whose commit failed loses acknowledged events.
    @Test func acknowledgingAFailedWriteIsCaught() {
        let failures = Self.failures(seeds: Self.seeds) { machine, input, now in
            machine.handle(input, now: now).map { action in
                if case .answerFailed(let write) = action { .answerCommitted(write) } else { action }
            }
        }
        #expect(failures.contains { $0.contains("was acknowledged but the store holds") }, "\(failures)")
    }
}
