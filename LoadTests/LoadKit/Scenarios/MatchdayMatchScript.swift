/// Writes one match: draws its incidents and timings from its own random generator, then
/// folds them in time order into the match state, each step giving the merge patch of what
/// changed.
///
/// Match minutes map onto real time: minute `m` of the first half is `m * secondsPerMinute`
/// after kickoff, the second half comes after the half-time break.
struct MatchdayMatchScript {
    private let options: MatchdayOptions
    private let index: Int
    private var random: SeededRandom
    private let kickoff: Double

    /// Short codes for the alerts; the home and away sides of a match always differ.
    static let teamCodes = ["ARS", "AVL", "BHA", "BOU", "BRE", "CHE", "CRY", "EVE", "FUL", "IPS",
                            "LEI", "LIV", "MCI", "MUN", "NEW", "NFO", "SOU", "TOT", "WHU", "WOL"]

    init(options: MatchdayOptions, index: Int, seed: UInt64) {
        self.options = options
        self.index = index
        random = SeededRandom(seed: seed)
        kickoff = random.uniform(0, options.kickoffSpreadSeconds)
    }

    private enum Team: String { case home, away }

    /// An incident before the state is folded: when, what, for whom.
    private struct Step {
        var at: Double
        var kind: MatchdayEvent.Kind
        var team: Team = .home
        var minute = 0
    }

    private var secondsPerMinute: Double { options.matchSeconds / 90 }
    private var halfTime: Double { kickoff + 45 * secondsPerMinute }
    private var secondHalf: Double { halfTime + options.halfTimeSeconds }
    private var fullTime: Double { secondHalf + 45 * secondsPerMinute }

    /// Real time of match minute `minute` (0 to 90).
    private func time(ofMinute minute: Double) -> Double {
        minute < 45 ? kickoff + minute * secondsPerMinute : secondHalf + (minute - 45) * secondsPerMinute
    }

    /// Match clock seconds shown at real time `at` while the clock runs.
    private func clockSeconds(at time: Double) -> Int {
        let minutes = time < halfTime ? (time - kickoff) / secondsPerMinute : 45 + (time - secondHalf) / secondsPerMinute
        return Int((minutes * 60).rounded())
    }

    mutating func write() -> (MatchdayMatch, [MatchdayEvent]) {
        var steps = [Step(at: kickoff, kind: .kickoff), Step(at: halfTime, kind: .halfTime),
                     Step(at: secondHalf, kind: .secondHalf), Step(at: fullTime, kind: .fullTime)]
        for (start, end) in [(kickoff, halfTime), (secondHalf, fullTime)] {
            // Ticks strictly inside the half: the phase events set the clock at its ends.
            var ticks = 1
            while start + Double(ticks) * options.clockTickSeconds < end - 1e-6 {
                steps.append(Step(at: start + Double(ticks) * options.clockTickSeconds, kind: .clock))
                ticks += 1
            }
            var stats = start
            while true {
                stats += random.uniform(options.statsIntervalSeconds - options.statsJitterSeconds,
                                        options.statsIntervalSeconds + options.statsJitterSeconds)
                guard stats < end else { break }
                steps.append(Step(at: stats, kind: .stats))
            }
        }
        for (kind, mean) in [(MatchdayEvent.Kind.goal, options.goalsPerMatch), (.yellowCard, options.yellowCardsPerMatch),
                             (.redCard, options.redCardsPerMatch)] {
            for _ in 0..<random.poisson(mean: mean) {
                let minute = random.chance(0.5) ? random.uniform(0.2, 44.8) : random.uniform(45.2, 89.8)
                steps.append(incident(kind, minute: minute, team: random.chance(0.55) ? .home : .away))
            }
        }
        for team in [Team.home, .away] {
            for _ in 0..<random.integer(in: options.substitutionsPerTeam) {
                steps.append(incident(.substitution, minute: random.uniform(46, 89.8), team: team))
            }
        }
        // Stable order: by time, ties in the order written (phases before incidents before ticks).
        let ordered = steps.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        var state = MatchState(homeCode: Self.teamCodes[index % 20],
                               awayCode: Self.teamCodes[(index + 1 + (index / 20) % 19) % 20])
        let events = ordered.map { step in
            let (importance, alert, patch) = state.apply(step.kind, team: step.team == .home, minute: step.minute,
                                                         clockSeconds: step.kind == .clock ? clockSeconds(at: step.at) : 0,
                                                         random: &random)
            return MatchdayEvent(offsetNanoseconds: Self.nanoseconds(step.at), match: index, kind: step.kind,
                                 importance: importance, alert: alert, patchMembers: patch)
        }
        let end = fullTime + random.uniform(options.endDelaySeconds.lowerBound, options.endDelaySeconds.upperBound)
        let channelID = options.channelPrefix + String(repeating: "0", count: max(0, 4 - String(index + 1).count)) + String(index + 1)
        var create = #"{"id":\#(jsonString(channelID)),"storagePolicy":"no-storage""#
        if let policy = options.policyJSON { create += #","policy":\#(policy)"# }
        create += #","initialState":{\#(MatchState.initialMembers)}}"#
        let match = MatchdayMatch(index: index, channelID: channelID, homeCode: state.homeCode, awayCode: state.awayCode,
                                  homeGoals: state.home, awayGoals: state.away, kickoffOffsetNanoseconds: Self.nanoseconds(kickoff),
                                  endOffsetNanoseconds: Self.nanoseconds(end), createBody: Array(create.utf8),
                                  dismissAfterSeconds: options.dismissAfterSeconds)
        return (match, events)
    }

    private func incident(_ kind: MatchdayEvent.Kind, minute: Double, team: Team) -> Step {
        Step(at: time(ofMinute: minute), kind: kind, team: team, minute: Int(minute) + 1)
    }

    static func nanoseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1e9).rounded()) }
}
