import Testing
import TouchlineCore

@Suite struct TennisRulesTests {
    func sports(bestOf: Int = 3) -> SportsChannel {
        SportsChannel(attributes: MatchAttributes(sport: .tennis, homeName: "Carlos Alcaraz", homeCode: "ALC", awayName: "Jannik Sinner",
                                                  awayCode: "SIN", competition: "ATP Finals", kickoff: 1_767_290_400, bestOf: bestOf))
    }

    struct Played {
        var state: TennisContentState
        /// Importance and alert of each event, in order.
        var changes: [(importance: Importance, alert: LiveActivityAlert?)]
    }

    /// Plays `points` ("h" for the first player, "a" for the second) after the start, the first
    /// player serving first.
    private func play(_ points: String, bestOf: Int = 3, from state: TennisContentState? = nil) throws -> Played {
        let sports = sports(bestOf: bestOf)
        var json = state?.json ?? sports.initialState
        var changes: [(Importance, LiveActivityAlert?)] = []
        let start = state == nil ? [#"{"type": "status", "status": "live"}"#, #"{"type": "server", "team": "home"}"#] : []
        for text in start + points.map({ #"{"type": "point", "team": "\#($0 == "h" ? "home" : "away")"}"# }) {
            let result = try sports.apply(try sports.event(json: JSONParser.parse(Array(text.utf8))), to: json, now: UnixTime(seconds: 1_767_290_400))
            json = result.state
            changes.append((result.importance, result.alert))
        }
        return Played(state: try TennisContentState(json: json), changes: Array(changes.dropFirst(start.count)))
    }

    @Test func aGameIsFourPointsAndTheServeChanges() throws {
        let played = try play("hhh")
        #expect((played.state.homePoints, played.state.awayPoints) == ("40", "0"))
        let game = try play("hhhh")
        #expect(game.state.sets == [TennisSet(home: 1, away: 0)] && (game.state.homePoints, game.state.awayPoints) == ("0", "0"))
        #expect(game.state.server == .away)
        #expect(game.changes.allSatisfy { $0.importance == .normal && $0.alert == nil })
    }

    @Test func deuceAndAdvantage() throws {
        #expect(try play("hhhaaa").state.homePoints == "40")
        let advantage = try play("hhhaaah").state
        #expect((advantage.homePoints, advantage.awayPoints) == ("AD", "40"))
        let deuceAgain = try play("hhhaaaha").state
        #expect((deuceAgain.homePoints, deuceAgain.awayPoints) == ("40", "40") && deuceAgain.sets[0] == TennisSet())
        let won = try play("hhhaaahaaa").state
        #expect(won.sets[0] == TennisSet(home: 0, away: 1))
    }

    /// 6-6 starts a tie-break, counted in points; the serve changes after its first point and
    /// then every two; 7-5 in it wins the set 7-6, and the player who received first in the
    /// tie-break serves first in the next set.
    @Test func aTieBreakDecidesTheSetAtSixAll() throws {
        // Games alternate: the first player holds, the second holds, twelve times.
        let sixAll = String(repeating: "hhhhaaaa", count: 6)
        let tieBreak = try play(sixAll)
        #expect(tieBreak.state.tieBreak && tieBreak.state.sets[0] == TennisSet(home: 6, away: 6) && tieBreak.state.server == .home)
        var servers: [Team?] = []
        var state = tieBreak.state
        for point in "hahahahahah" {
            state = try play(String(point), from: state).state
            servers.append(state.server)
        }
        // After points 1, 3, 5... the serve changes: A B B A A B B A A B B.
        #expect(Array(servers.prefix(10)) == [.away, .away, .home, .home, .away, .away, .home, .home, .away, .away])
        #expect((state.homePoints, state.awayPoints) == ("6", "5"))
        let set = try play("h", from: state)
        #expect(set.state.sets == [TennisSet(home: 7, away: 6), TennisSet()] && set.state.homeSets == 1 && !set.state.tieBreak)
        #expect(set.changes[0].importance == .critical && set.changes[0].alert == LiveActivityAlert(title: "Set", body: "ALC wins set 1, 7-6"))
        #expect(set.state.server == .away, "the first player served first in the tie-break")
    }

    @Test func matchPointIsCriticalOnceAndTheMatchEndsTheScoring() throws {
        // 6-0, then 5-0 and 40-0: a match point from 30-0.
        let almost = try play(String(repeating: "hhhh", count: 11) + "hh")
        let matchPoint = try play("h", from: almost.state)
        #expect(matchPoint.state.matchPoint == .home)
        #expect(matchPoint.changes[0].importance == .critical
                && matchPoint.changes[0].alert == LiveActivityAlert(title: "Match point", body: "Match point for ALC"))
        let saved = try play("a", from: matchPoint.state)
        #expect(saved.state.matchPoint == .home && saved.changes[0].importance == .normal, "still match point: no second alert")
        let match = try play("h", from: saved.state)
        #expect(match.state.status == .finished && match.state.winner == .home && match.state.matchPoint == nil)
        #expect(match.changes[0].importance == .critical
                && match.changes[0].alert == LiveActivityAlert(title: "Game, set and match", body: "ALC wins 6-0 6-0"))
        #expect(throws: EventValidationError.self) { try play("a", from: match.state) }
        #expect(TennisRules.summary(match.state, sports().attributes) == "ALC 6-0 6-0 SIN, ALC won")
    }

    @Test func bestOfFiveNeedsThreeSets() throws {
        let twoSets = try play(String(repeating: "hhhh", count: 12), bestOf: 5)
        #expect(twoSets.state.homeSets == 2 && twoSets.state.status == .live && twoSets.state.sets.count == 3)
        #expect(try play(String(repeating: "hhhh", count: 18), bestOf: 5).state.winner == .home)
    }

    @Test func aPointNeedsTheMatchLive() throws {
        let sports = sports()
        #expect(throws: EventValidationError.self) {
            try sports.apply(sports.event(json: ["type": "point", "team": "home"]), to: sports.initialState, now: UnixTime(seconds: 0))
        }
    }

    @Test func theStateIsValidatedAsTheAppDecodesIt() throws {
        let state = try play("hhhaaah").state
        #expect(try TennisContentState(json: state.json) == state)
        for patch: JSONValue in [["points": ["home": "AD", "away": "30"]], ["points": ["home": "love", "away": "0"]],
                                 ["sets": [["home": 8, "away": 0]]], ["sets": []], ["tieBreak": true], ["homeSets": 4]] {
            #expect(throws: EventValidationError.self, "\(patch)") { try TennisContentState(json: state.json.applyingMergePatch(patch)) }
        }
        #expect(throws: EventValidationError.self) {
            try MatchAttributes(json: ["sport": "tennis", "homeName": "A", "homeCode": "A", "awayName": "B", "awayCode": "B",
                                       "competition": "C", "kickoff": 0, "bestOf": 4])
        }
        #expect(throws: EventValidationError.self) {
            try MatchAttributes(json: ["sport": "football", "homeName": "A", "homeCode": "A", "awayName": "B", "awayCode": "B",
                                       "competition": "C", "kickoff": 0, "bestOf": 3])
        }
    }
}
