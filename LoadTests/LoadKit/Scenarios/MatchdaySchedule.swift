/// A whole match day, written up front from `MatchdayOptions` and deterministic from its seed:
/// every match's channel, the events of all matches in the order they are due, and the counts
/// a run should arrive at.
///
/// Events are merge patches (content-state way (a)) on generic channels, shaped like a match
/// state. Per match: kickoff (live, 1H), a clock tick every second while the clock runs (low),
/// stats every few seconds (low), goals (critical, "Goal!"), yellow cards (normal), rare red cards
/// (critical), second-half substitutions (normal), half time and second half (normal), the final
/// whistle (critical, "Full time"), and a second or two later the channel's end.
public struct MatchdaySchedule: Sendable {
    public let options: MatchdayOptions
    public let matches: [MatchdayMatch]
    /// Every event, by due time (ties: by match, then in match order), so one match's events keep their order.
    public let events: [MatchdayEvent]
    /// How many events of each kind the schedule holds (every kind present, 0 if none).
    public let eventCounts: [MatchdayEvent.Kind: Int]

    /// Throws when the options cannot make a match day (``MatchdayOptions/validate()``).
    public init(options: MatchdayOptions = MatchdayOptions()) throws(MatchdayOptions.Invalid) {
        try options.validate()
        self.options = options
        var seeds = SeededRandom(seed: options.seed)
        var matches: [MatchdayMatch] = []
        var events: [MatchdayEvent] = []
        for index in 0..<options.matches {
            var script = MatchdayMatchScript(options: options, index: index, seed: seeds.next())
            let (match, matchEvents) = script.write()
            matches.append(match)
            events += matchEvents
        }
        // Each match's events are already in order: a stable sort by time then match keeps it.
        self.events = events.enumerated().sorted {
            ($0.element.offsetNanoseconds, $0.element.match, $0.offset) < ($1.element.offsetNanoseconds, $1.element.match, $1.offset)
        }.map(\.element)
        self.matches = matches
        var counts = Dictionary(uniqueKeysWithValues: MatchdayEvent.Kind.allCases.map { ($0, 0) })
        for event in events { counts[event.kind, default: 0] += 1 }
        eventCounts = counts
    }

    /// Events of each match, by match index (the end not included).
    public var eventsPerMatch: [Int] {
        var counts = [Int](repeating: 0, count: matches.count)
        for event in events { counts[event.match] += 1 }
        return counts
    }

    /// Events of each importance.
    public var importanceCounts: [MatchdayImportance: Int] {
        var counts = Dictionary(uniqueKeysWithValues: MatchdayImportance.allCases.map { ($0, 0) })
        for event in events { counts[event.importance, default: 0] += 1 }
        return counts
    }
}
