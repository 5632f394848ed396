import Foundation
import LoadKit
import Testing

@Suite struct MatchdayScheduleTests {
    static let schedule = try! MatchdaySchedule()

    private static func options(seed: UInt64, matches: Int = 20) -> MatchdayOptions {
        var options = MatchdayOptions()
        options.seed = seed
        options.matches = matches
        return options
    }

    private static func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// RFC 7396 on the top level, which is all the schedule's patches need (`lastIncident` is always whole).
    private static func merge(_ patch: [String: Any], into state: inout [String: Any]) {
        for (name, value) in patch { state[name] = value is NSNull ? nil : value }
    }

    @Test func theSameSeedGivesTheSameMatchDay() throws {
        let first = try MatchdaySchedule(options: Self.options(seed: 7))
        let second = try MatchdaySchedule(options: Self.options(seed: 7))
        #expect(first.events == second.events)
        #expect(first.matches == second.matches)
    }

    @Test func anotherSeedGivesAnotherMatchDay() throws {
        let first = try MatchdaySchedule(options: Self.options(seed: 7))
        let second = try MatchdaySchedule(options: Self.options(seed: 8))
        #expect(first.events != second.events)
        #expect(first.matches.map(\.kickoffOffsetNanoseconds) != second.matches.map(\.kickoffOffsetNanoseconds))
    }

    @Test func eventsAreInTimeOrderAndCountedByKind() {
        let schedule = Self.schedule
        #expect(zip(schedule.events, schedule.events.dropFirst()).allSatisfy { $0.offsetNanoseconds <= $1.offsetNanoseconds })
        #expect(schedule.eventCounts.values.reduce(0, +) == schedule.events.count)
        for kind in MatchdayEvent.Kind.allCases {
            #expect(schedule.eventCounts[kind] == schedule.events.count { $0.kind == kind })
        }
        #expect(schedule.importanceCounts.values.reduce(0, +) == schedule.events.count)
        #expect(schedule.eventsPerMatch.reduce(0, +) == schedule.events.count)
        #expect(schedule.eventsPerMatch[5] == schedule.events.count { $0.match == 5 })
    }

    @Test func kickoffsAreSpreadOverTheFirstSeconds() {
        let kickoffs = Self.schedule.matches.map { Double($0.kickoffOffsetNanoseconds) / 1e9 }
        #expect(kickoffs.allSatisfy { (0..<10).contains($0) })
        #expect(kickoffs.count { $0 < 5 } > 100 && kickoffs.count { $0 >= 5 } > 100)
    }

    @Test func everyMatchRunsFromKickoffToFinalWhistleThenEnds() {
        let schedule = Self.schedule
        let byMatch = Dictionary(grouping: schedule.events, by: \.match)
        #expect(byMatch.count == 300)
        for match in schedule.matches {
            let events = byMatch[match.index] ?? []
            #expect(events.first?.kind == .kickoff)
            #expect(events.first?.offsetNanoseconds == match.kickoffOffsetNanoseconds)
            #expect(events.last?.kind == .fullTime)
            let phases = events.filter { [.kickoff, .halfTime, .secondHalf, .fullTime].contains($0.kind) }.map(\.kind)
            #expect(phases == [.kickoff, .halfTime, .secondHalf, .fullTime])
            let delay = match.endOffsetNanoseconds - (events.last?.offsetNanoseconds ?? 0)
            #expect((1_000_000_000...2_000_000_000).contains(delay))
            // 90 match minutes in 90 s plus an 8 s break.
            let length = Double((events.last?.offsetNanoseconds ?? 0) - match.kickoffOffsetNanoseconds) / 1e9
            #expect(abs(length - 98) < 0.001)
        }
        #expect(Set(schedule.matches.map(\.channelID)).count == 300)
        #expect(schedule.matches.first?.channelID == "match-0001" && schedule.matches.last?.channelID == "match-0300")
    }

    @Test func theClockTicksEverySecondWhileItRuns() throws {
        let events = Self.schedule.events.filter { $0.match == 42 }
        let halfTime = try #require(events.first { $0.kind == .halfTime })
        let secondHalf = try #require(events.first { $0.kind == .secondHalf })
        let ticks = events.filter { $0.kind == .clock }
        #expect(!ticks.contains { $0.offsetNanoseconds > halfTime.offsetNanoseconds && $0.offsetNanoseconds < secondHalf.offsetNanoseconds })
        let gaps = zip(ticks, ticks.dropFirst()).map { Double($1.offsetNanoseconds - $0.offsetNanoseconds) / 1e9 }
            .filter { $0 < 2 }
        #expect(gaps.allSatisfy { abs($0 - 1) < 1e-6 })
        #expect(ticks.count == 88)
        // Clock readings grow a minute a tick, from 1:00 to 89:00; 45:00 and 90:00 come with the phases.
        let readings = try ticks.map { try #require(Self.json(Array("{\($0.patchMembers)}".utf8))["clockSeconds"] as? Int) }
        #expect(readings == Array(stride(from: 60, through: 2640, by: 60)) + Array(stride(from: 2760, through: 5340, by: 60)))
    }

    @Test func statsComeEveryFewSeconds() {
        let stats = Self.schedule.events.filter { $0.match == 7 && $0.kind == .stats }
        #expect((14...22).contains(stats.count))
    }

    @Test func incidentCountsFollowTheirMeans() {
        let counts = Self.schedule.eventCounts
        let matches = 300.0
        #expect(abs(Double(counts[.goal]!) / matches - 2.7) < 0.3)
        #expect(abs(Double(counts[.yellowCard]!) / matches - 3.5) < 0.35)
        #expect((15...90).contains(counts[.redCard]!))
        #expect((6 * 300...10 * 300).contains(counts[.substitution]!))
        #expect(counts[.kickoff] == 300 && counts[.fullTime] == 300 && counts[.halfTime] == 300)
    }

    @Test func everyBodyIsValidJSONAndTheFinalStateHasTheScore() throws {
        let schedule = try MatchdaySchedule(options: Self.options(seed: 3, matches: 40))
        var states = try schedule.matches.map { match -> [String: Any] in
            let create = try Self.json(match.createBody)
            #expect(Set(create.keys) == ["id", "storagePolicy", "initialState"])
            #expect(create["id"] as? String == match.channelID && create["storagePolicy"] as? String == "no-storage")
            return try #require(create["initialState"] as? [String: Any])
        }
        var seqs = [Int](repeating: 0, count: schedule.matches.count)
        for event in schedule.events {
            seqs[event.match] += 1
            let sentAt = 1_764_500_000_123_456_789 + Int64(seqs[event.match])
            let body = try Self.json(event.body(seq: seqs[event.match], sentAt: sentAt))
            #expect(Set(body.keys).isSubset(of: ["seq", "patch", "importance", "alert"]))
            #expect(body["seq"] as? Int == seqs[event.match])
            #expect(body["importance"] as? String == event.importance.rawValue)
            let patch = try #require(body["patch"] as? [String: Any])
            #expect((patch["sentAt"] as? NSNumber)?.int64Value == sentAt)
            Self.merge(patch, into: &states[event.match])
        }
        for match in schedule.matches {
            let state = states[match.index]
            #expect(state["home"] as? Int == match.homeGoals && state["away"] as? Int == match.awayGoals)
            #expect(state["status"] as? String == "finished" && state["clockSeconds"] as? Int == 5400)
            let end = try Self.json(match.endBody(sentAt: 1_764_500_000_000_000_000))
            #expect(end["dismissAt"] as? Int == 1_764_500_300)
            #expect(((end["event"] as? [String: Any])?["patch"] as? [String: Any])?["sentAt"] != nil)
        }
        #expect(schedule.matches.map { $0.homeGoals + $0.awayGoals }.reduce(0, +) == schedule.eventCounts[.goal])
    }

    @Test func alertsComeOnlyWithCriticalEvents() throws {
        for event in Self.schedule.events {
            #expect((event.alert != nil) == (event.importance == .critical))
            let body = try Self.json(event.body(seq: 1, sentAt: 1))
            #expect((body["alert"] != nil) == (event.importance == .critical))
            switch event.kind {
            case .goal, .redCard, .fullTime: #expect(event.importance == .critical)
            case .clock, .stats: #expect(event.importance == .low)
            default: #expect(event.importance == .normal)
            }
        }
        let goal = try #require(Self.schedule.events.first { $0.kind == .goal })
        let match = Self.schedule.matches[goal.match]
        #expect(goal.alert?.title == "Goal!")
        let score = try #require(goal.alert?.body)
        #expect(score == "\(match.homeCode) 1-0 \(match.awayCode)" || score == "\(match.homeCode) 0-1 \(match.awayCode)")
    }

    @Test func aPolicyOptionGoesIntoTheCreateBody() throws {
        var options = Self.options(seed: 1, matches: 2)
        options.policyJSON = #"{"minimumIntervalSeconds":1,"burst":3}"#
        let create = try Self.json(try MatchdaySchedule(options: options).matches[0].createBody)
        #expect((create["policy"] as? [String: Any])?["burst"] as? Int == 3)
    }

    @Test func optionsThatMakeNoMatchDayAreRefusedWithTheReason() {
        var options = MatchdayOptions()
        options.statsJitterSeconds = 5
        #expect(throws: MatchdayOptions.Invalid.self) { try MatchdaySchedule(options: options) }
        options = MatchdayOptions()
        options.clockTickSeconds = 0
        #expect { try MatchdaySchedule(options: options) } throws: { "\($0)".contains("clock tick") }
        options = MatchdayOptions()
        options.channelPrefix = "match/"
        #expect { try MatchdaySchedule(options: options) } throws: { "\($0)".contains("channel prefix") }
        options = MatchdayOptions()
        options.matches = 0
        #expect { try MatchdaySchedule(options: options) } throws: { "\($0)".contains("matches must be at least 1") }
    }
}
