import Testing
import TouchlineCore

/// A channel's rules under delays, failures, restarts and moves, on many seeds
/// (``ChannelSimulation``), and the negative controls that show the simulation sees a broken rule.
@Suite("Channel simulation")
struct ChannelSimulationTests {
    typealias Machine = ChannelMachine<TestRules>

    static let seeds: ClosedRange<UInt64> = 1...2_000

    /// What runs over `seeds` found: the first failures (a seed and what broke), what they went
    /// through in all, and how many rolled over.
    struct Exploration {
        var failures: [String] = []
        var seen = ChannelSimulation.Seen()
        var runsRolledOver = 0
    }

    static func explore(seeds: ClosedRange<UInt64>, step: @escaping ChannelSimulation.Step = { $0.handle($1, now: $2) }) -> Exploration {
        var exploration = Exploration()
        for seed in seeds {
            var simulation = ChannelSimulation(seed: seed, step: step)
            simulation.run()
            if let failure = simulation.failures.first { exploration.failures.append("seed \(seed): \(failure)") }
            if exploration.failures.count >= 5 { break }
            exploration.seen.add(simulation.seen)
            if simulation.seen.rollovers > 0 { exploration.runsRolledOver += 1 }
        }
        return exploration
    }

    /// Every invariant holds on every seed, and the seeds go through what the checks are about:
    /// most runs roll over, and in all they see failed commits, pushes and creates, answers held
    /// behind a write, input refused while the store fails, operators' rollovers, crashes (some
    /// in the middle of a create), lapsed leases and moves.
    @Test func everyInvariantHoldsOnTwoThousandSeeds() {
        let exploration = Self.explore(seeds: Self.seeds)
        #expect(exploration.failures.isEmpty, "\(exploration.failures)")
        let seen = exploration.seen
        #expect(exploration.runsRolledOver >= 1_500, "\(exploration.runsRolledOver) of 2,000 runs rolled over")
        #expect(seen.restarts >= 500 && seen.lapses >= 1_000 && seen.moves >= 500, "\(seen)")
        #expect(seen.failedCommits >= 1_000 && seen.failedPushes >= 2_000 && seen.heldInputs >= 200, "\(seen)")
        #expect(seen.refusedForStore >= 500 && seen.operatorRollovers >= 500, "\(seen)")
        #expect(seen.refusedCreates >= 200 && seen.reconciled >= 100, "\(seen)")
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
        let failures = Self.explore(seeds: Self.seeds) { machine, input, now in
            if case .ownershipChanged(.notActing) = input { return [] }
            return machine.handle(input, now: now)
        }.failures
        #expect(failures.contains { $0.contains("did not act for the channel") }, "\(failures)")
    }

    /// A shell that acknowledges a write whose commit failed loses acknowledged events.
    @Test func acknowledgingAFailedWriteIsCaught() {
        let failures = Self.explore(seeds: Self.seeds) { machine, input, now in
            machine.handle(input, now: now).map { action in
                if case .answerFailed(let write) = action { .answerCommitted(write) } else { action }
            }
        }.failures
        #expect(failures.contains { $0.contains("was acknowledged but the store holds") }, "\(failures)")
    }

    /// A channel that takes the id APNs gave as saved before the store has it answers the
    /// create with a channel a crash would lose.
    @Test func answeringACreateBeforeItsIDIsStoredIsCaught() {
        let failures = Self.explore(seeds: Self.seeds) { machine, input, now in
            var actions = machine.handle(input, now: now)
            if case .lifecycle(.apnsCreated) = input { actions += machine.handle(.lifecycle(.idSaved(.success(()))), now: now) }
            return actions
        }.failures
        #expect(failures.contains { $0.contains("answered before its APNs channel was stored") }, "\(failures)")
    }
}
