import Testing
import TouchlineCore

@Suite struct SportsReducerTests {
    let attributes = MatchAttributes(homeName: "Arsenal", homeCode: "ARS", awayName: "Chelsea", awayCode: "CHE",
                                     competition: "Premier League", kickoff: 1_767_290_400)
    var reducer: FootballReducer { FootballReducer(attributes: attributes) }

    private func event(_ json: String) throws -> SportEvent {
        try SportEvent(json: JSONParser.parse(Array(json.utf8)), sport: .football)
    }

    /// The football event of `json`, without the envelope.
    private func footballEvent(_ json: JSONValue) throws -> MatchEvent {
        guard case .football(let event) = try SportEvent(json: json, sport: .football).parsed else { throw EventValidationError(field: nil, "not football") }
        return event
    }

    /// The validation error text for an event that must be rejected.
    private func rejection(_ json: String) throws -> String? {
        do {
            _ = try SportEvent(json: JSONParser.parse(Array(json.utf8)), sport: .football)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Kick-off time of the test match, Unix seconds.
    static let kickoff: Int64 = 1_767_290_400

    /// Applies events given as JSON text in order, all received at `second`, starting from `state`.
    private func play(_ events: [String], from state: MatchContentState = .initial, at second: Int64 = kickoff) throws
        -> (state: MatchContentState, importance: Importance, alert: LiveActivityAlert?) {
        var result = (state: state, importance: Importance.low, alert: LiveActivityAlert?.none)
        for json in events {
            let parsed = try event(json)
            let folded = reducer.apply(try footballEvent(JSONParser.parse(Array(json.utf8))), to: result.state, at: UnixTime(seconds: second))
            result = (folded.state, parsed.importanceOverride ?? folded.importance, folded.alert)
        }
        return result
    }

    @Test func aGoalScoresAlertsAndIsCritical() throws {
        let result = try play([
            #"{"type": "goal", "team": "home", "player": "Saka", "minute": 12, "seq": 1}"#,
            #"{"type": "goal", "team": "away", "minute": 40, "seq": 2}"#,
            #"{"type": "goal", "team": "home", "player": "Saka", "minute": 67, "seq": 42}"#,
        ])
        #expect(result.state.homeScore == 2)
        #expect(result.state.awayScore == 1)
        #expect(result.importance == .critical)
        #expect(result.alert == LiveActivityAlert(title: "Goal!", body: "ARS 2-1 CHE"))
        #expect(result.state.lastIncident == MatchIncident(kind: .goal, team: .home, minute: 67, text: "67' Goal: Saka (ARS)"))
    }

    @Test func anOwnGoalCountsForTheTeamNamed() throws {
        let result = try play([#"{"type": "goal", "team": "away", "player": "White", "ownGoal": true}"#])
        #expect((result.state.homeScore, result.state.awayScore) == (0, 1))
        #expect(result.state.lastIncident?.text == "Own goal: White (CHE)")
        #expect(result.state.lastIncident?.kind == .ownGoal)
    }

    @Test func cardsCountRedsAndOnlyRedsAlert() throws {
        let yellow = try play([#"{"type": "card", "team": "away", "card": "yellow", "player": "Caicedo", "minute": 20}"#])
        #expect(yellow.importance == .normal)
        #expect(yellow.alert == nil)
        #expect(yellow.state.awayRedCards == 0)
        #expect(yellow.state.lastIncident?.text == "20' Yellow card: Caicedo (CHE)")

        let red = try play([#"{"type": "card", "team": "away", "card": "red", "player": "Jorginho", "minute": 55}"#])
        #expect(red.importance == .critical)
        #expect(red.state.awayRedCards == 1)
        #expect(red.alert == LiveActivityAlert(title: "Red card", body: "55' Red card: Jorginho (CHE)"))

        let second = try play([#"{"type": "card", "team": "home", "card": "second-yellow", "minute": 88}"#], from: red.state)
        #expect(second.importance == .critical)
        #expect((second.state.homeRedCards, second.state.awayRedCards) == (1, 1))
        #expect(second.state.lastIncident == MatchIncident(kind: .secondYellow, team: .home, minute: 88, text: "88' Second yellow (ARS)"))
    }

    @Test func penaltiesScoredCountAsGoalsAndMissedOnesDoNot() throws {
        let scored = try play([#"{"type": "penalty", "team": "away", "outcome": "scored", "player": "Palmer", "minute": 30}"#])
        #expect(scored.state.awayScore == 1)
        #expect(scored.importance == .critical)
        #expect(scored.alert == LiveActivityAlert(title: "Goal! (penalty)", body: "ARS 0-1 CHE"))
        #expect(scored.state.lastIncident?.kind == .penaltyScored)

        let missed = try play([#"{"type": "penalty", "team": "home", "outcome": "missed", "player": "Saka", "minute": 75}"#], from: scored.state)
        #expect((missed.state.homeScore, missed.state.awayScore) == (0, 1))
        #expect(missed.importance == .critical)
        #expect(missed.alert == LiveActivityAlert(title: "Penalty missed", body: "75' Penalty missed: Saka (ARS)"))
    }

    @Test func substitutionsAreNormalAndDescribeWhoCameOn() throws {
        let both = try play([#"{"type": "substitution", "team": "home", "playerIn": "Havertz", "playerOut": "Saka", "minute": 80}"#])
        #expect(both.importance == .normal)
        #expect(both.alert == nil)
        #expect(both.state.lastIncident == MatchIncident(kind: .substitution, team: .home, minute: 80, text: "80' Substitution: Havertz for Saka (ARS)"))
        let onlyIn = try play([#"{"type": "substitution", "team": "away", "playerIn": "Mudryk"}"#])
        #expect(onlyIn.state.lastIncident?.text == "Substitution: Mudryk on (CHE)")
        let nobody = try play([#"{"type": "substitution", "team": "away"}"#])
        #expect(nobody.state.lastIncident?.text == "Substitution (CHE)")
    }

    @Test func aVARDecisionOverturningAGoalTakesItBack() throws {
        let goal = try play([#"{"type": "goal", "team": "home", "minute": 69}"#])
        let overturned = try play([#"{"type": "var", "team": "home", "decision": "goal-disallowed", "minute": 70}"#], from: goal.state)
        #expect(overturned.state.homeScore == 0)
        #expect(overturned.importance == .critical)
        #expect(overturned.alert == LiveActivityAlert(title: "Goal disallowed", body: "ARS 0-0 CHE"))
        #expect(overturned.state.lastIncident == MatchIncident(kind: .varDecision, team: .home, minute: 70, text: "70' VAR: goal disallowed (ARS)"))

        // A disallowed goal the gateway never saw cannot push the score below zero.
        let fromNothing = try play([#"{"type": "var", "team": "away", "decision": "goal-disallowed"}"#])
        #expect(fromNothing.state.awayScore == 0)

        for decision in ["goal-confirmed", "penalty-awarded", "penalty-cancelled"] {
            let result = try play([#"{"type": "var", "team": "away", "decision": "\#(decision)"}"#], from: goal.state)
            #expect(result.importance == .normal)
            #expect(result.alert == nil)
            #expect(result.state.homeScore == 1)
        }
    }

    @Test func statusPeriodAndClockDriveTheClock() throws {
        let t0 = Self.kickoff
        var result = try play([#"{"type": "status", "status": "live"}"#,
                               #"{"type": "period", "period": "1H", "clockSeconds": 0, "clockRunning": true}"#], at: t0)
        #expect(result.state.status == .live)
        #expect(result.state.period == "1H")
        #expect(result.state.clockRunning)
        #expect(result.state.clockStartedAt == Int(t0))
        #expect(result.importance == .normal)

        // A tick re-anchors the running clock to the provider's reading (here 4 s behind wall time).
        result = try play([#"{"type": "clock", "clockSeconds": 1230}"#], from: result.state, at: t0 + 1234)
        #expect(result.state.clockSeconds == 1230)
        #expect(result.state.clockRunning)
        #expect(result.state.clockStartedAt == Int(t0) + 4)
        #expect(result.importance == .low)
        #expect(result.alert == nil)

        // Half-time 1,000 s after the tick: the clock stops at the time it reached.
        result = try play([#"{"type": "status", "status": "break"}"#, #"{"type": "period", "period": "HT"}"#],
                          from: result.state, at: t0 + 2234)
        #expect(result.state.status == .break)
        #expect(result.state.period == "HT")
        #expect(!result.state.clockRunning)
        #expect(result.state.clockSeconds == 2230)
        #expect(result.state.clockStartedAt == nil)

        result = try play([#"{"type": "status", "status": "live"}"#,
                           #"{"type": "period", "period": "2H", "clockSeconds": 2700, "clockRunning": true}"#],
                          from: result.state, at: t0 + 3600)
        #expect(result.state.clockStartedAt == Int(t0) + 900)
        result = try play([#"{"type": "clock", "clockSeconds": 5400, "clockRunning": false}"#], from: result.state, at: t0 + 6400)
        #expect((result.state.period, result.state.clockSeconds, result.state.clockRunning) == ("2H", 5400, false))
        #expect(result.state.clockStartedAt == nil)

        // A period change without a reading keeps a running clock where it is.
        let running = MatchContentState(status: .live, period: "2H", clockSeconds: 5400, clockRunning: true, clockStartedAt: Int(t0))
        result = try play([#"{"type": "period", "period": "ET1"}"#], from: running, at: t0 + 5460)
        #expect((result.state.clockSeconds, result.state.clockStartedAt) == (5460, Int(t0)))
    }

    @Test func kickOffAndFullTimeCarryAlerts() throws {
        let kickOff = try play([#"{"type": "status", "status": "live"}"#])
        #expect(kickOff.importance == .normal)
        #expect(kickOff.alert == LiveActivityAlert(title: "Kick-off", body: "ARS v CHE"))

        let running = MatchContentState(status: .live, period: "2H", clockSeconds: 5640, clockRunning: true,
                                        clockStartedAt: Int(Self.kickoff), homeScore: 3, awayScore: 1)
        let fullTime = try play([#"{"type": "status", "status": "finished"}"#], from: running, at: Self.kickoff + 5760)
        #expect(fullTime.importance == .critical)
        #expect(fullTime.alert == LiveActivityAlert(title: "Full time", body: "ARS 3-1 CHE"))
        #expect(fullTime.state.status == .finished)
        #expect(!fullTime.state.clockRunning)
        #expect(fullTime.state.clockSeconds == 5760)

        let scheduled = try play([#"{"type": "status", "status": "scheduled"}"#])
        #expect(scheduled.alert == nil)
    }

    @Test func scoreCorrectionsAndStats() throws {
        let corrected = try play([#"{"type": "score", "home": 4, "away": 2}"#])
        #expect((corrected.state.homeScore, corrected.state.awayScore) == (4, 2))
        #expect(corrected.importance == .normal)
        #expect(corrected.alert == nil)

        let stats = try play([#"{"type": "stats", "homePossession": 58, "homeShots": 9, "awayShots": 4}"#,
                              #"{"type": "stats", "homeCorners": 5, "awayCorners": 2}"#])
        #expect(stats.importance == .low)
        #expect(stats.state == MatchContentState(homeShots: 9, awayShots: 4, homeCorners: 5, awayCorners: 2, homePossession: 58))
    }

    @Test func theDocumentedSampleMatchPlaysThrough() throws {
        let sample = #"""
            [
              {"seq": 1,  "type": "status", "status": "live"},
              {"seq": 2,  "type": "period", "period": "1H", "clockSeconds": 0, "clockRunning": true},
              {"seq": 3,  "type": "card", "team": "away", "card": "yellow", "player": "Caicedo", "minute": 20},
              {"seq": 4,  "type": "goal", "team": "home", "player": "Saka", "minute": 31},
              {"seq": 5,  "type": "stats", "homePossession": 58, "homeShots": 7, "awayShots": 3},
              {"seq": 6,  "type": "status", "status": "break"},
              {"seq": 7,  "type": "period", "period": "HT"},
              {"seq": 8,  "type": "status", "status": "live"},
              {"seq": 9,  "type": "period", "period": "2H", "clockSeconds": 2700, "clockRunning": true},
              {"seq": 10, "type": "penalty", "team": "away", "outcome": "scored", "player": "Palmer", "minute": 52},
              {"seq": 11, "type": "card", "team": "away", "card": "second-yellow", "player": "Caicedo", "minute": 60},
              {"seq": 12, "type": "goal", "team": "home", "player": "Saka", "minute": 67},
              {"seq": 13, "type": "var", "team": "home", "decision": "goal-confirmed", "minute": 68},
              {"seq": 14, "type": "substitution", "team": "home", "playerIn": "Havertz", "playerOut": "Saka", "minute": 80},
              {"seq": 15, "type": "clock", "clockSeconds": 5400},
              {"seq": 16, "type": "status", "status": "finished"}
            ]
            """#
        guard case .array(let events) = try JSONParser.parse(Array(sample.utf8)) else { Issue.record("not an array"); return }
        var state = MatchContentState.initial
        var alerts: [LiveActivityAlert] = []
        for (index, json) in events.enumerated() {
            let result = reducer.apply(try footballEvent(json), to: state, at: UnixTime(seconds: Self.kickoff + Int64(index) * 400))
            state = result.state
            if result.importance == .critical, let alert = result.alert { alerts.append(alert) }
        }
        // Events arrive 400 s apart: the clock runs on from 5400 until the final whistle.
        #expect(state == MatchContentState(
            status: .finished, period: "2H", clockSeconds: 5800, clockRunning: false, homeScore: 2, awayScore: 1,
            awayRedCards: 1, homeShots: 7, awayShots: 3, homePossession: 58,
            lastIncident: MatchIncident(kind: .substitution, team: .home, minute: 80, text: "80' Substitution: Havertz for Saka (ARS)")))
        #expect(alerts.map(\.title) == ["Goal!", "Goal! (penalty)", "Red card", "Goal!", "Full time"])
        #expect(alerts.last?.body == "ARS 2-1 CHE")
    }

    @Test func defaultImportancePerEventType() throws {
        let expectations: [(String, Importance)] = [
            (#"{"type": "goal", "team": "home"}"#, .critical),
            (#"{"type": "card", "team": "home", "card": "red"}"#, .critical),
            (#"{"type": "card", "team": "home", "card": "second-yellow"}"#, .critical),
            (#"{"type": "penalty", "team": "home", "outcome": "missed"}"#, .critical),
            (#"{"type": "var", "team": "home", "decision": "goal-disallowed"}"#, .critical),
            (#"{"type": "status", "status": "finished"}"#, .critical),
            (#"{"type": "period", "period": "2H"}"#, .normal),
            (#"{"type": "card", "team": "home", "card": "yellow"}"#, .normal),
            (#"{"type": "substitution", "team": "home"}"#, .normal),
            (#"{"type": "status", "status": "break"}"#, .normal),
            (#"{"type": "score", "home": 1, "away": 0}"#, .normal),
            (#"{"type": "clock", "clockSeconds": 60}"#, .low),
            (#"{"type": "stats", "homeShots": 1}"#, .low),
        ]
        for (json, importance) in expectations {
            #expect(try footballEvent(JSONParser.parse(Array(json.utf8))).defaultImportance == importance, "\(json)")
        }
    }

    @Test func theEventCanOverrideItsImportance() throws {
        let quietGoal = try play([#"{"type": "goal", "team": "home", "importance": "normal"}"#])
        #expect(quietGoal.importance == .normal)
        #expect(quietGoal.alert == LiveActivityAlert(title: "Goal!", body: "ARS 1-0 CHE"))
        let loudTick = try event(#"{"type": "clock", "clockSeconds": 2700, "importance": "critical"}"#)
        #expect(loudTick.importanceOverride == .critical)
        let folded = try SportsChannel(attributes: attributes).apply(loudTick, to: MatchContentState.initial.json, now: UnixTime(seconds: Self.kickoff))
        #expect(folded.importance == .critical)
    }

    @Test func parsedEventsAreTheDocumentedCases() throws {
        let goal = try event(#"{"type": "goal", "team": "home", "player": "Saka", "minute": 67, "seq": 42}"#)
        #expect(goal.parsed == .football(.goal(team: .home, player: "Saka", minute: 67, ownGoal: false)) && goal.importanceOverride == nil)
        let period = try event(#"{"type": "period", "period": "ET1", "clockSeconds": 5400, "importance": "low"}"#)
        #expect(period.parsed == .football(.period(label: "ET1", clockSeconds: 5400, clockRunning: nil)) && period.importanceOverride == .low)
        #expect(try event(#"{"type": "substitution", "team": "away", "playerOut": "Sterling", "minute": null}"#).parsed
            == .football(.substitution(team: .away, playerIn: nil, playerOut: "Sterling", minute: nil)))
    }

    @Test func invalidEventsAreRejectedNamingTheField() throws {
        let cases: [(String, String)] = [
            (#"[1]"#, "event must be a JSON object"),
            (#"{"team": "home"}"#, "missing field 'type'"),
            (#"{"type": "try", "team": "home"}"#,
             #"field 'type' must be one of "score", "period", "clock", "status", "goal", "card", "penalty", "substitution", "var", "stats""#),
            (#"{"type": "goal"}"#, "missing field 'team'"),
            (#"{"type": "goal", "team": "Home"}"#, #"field 'team' must be "home" or "away""#),
            (#"{"type": "goal", "team": 1}"#, #"field 'team' must be "home" or "away""#),
            (#"{"type": "goal", "team": "home", "minute": "67"}"#, "field 'minute' must be an integer from 0 to 200"),
            (#"{"type": "goal", "team": "home", "minute": 67.5}"#, "field 'minute' must be an integer from 0 to 200"),
            (#"{"type": "goal", "team": "home", "minute": -1}"#, "field 'minute' must be an integer from 0 to 200"),
            (#"{"type": "goal", "team": "home", "player": ""}"#, "field 'player' must be a string of 1 to 64 characters"),
            (#"{"type": "goal", "team": "home", "ownGoal": "no"}"#, "field 'ownGoal' must be true or false"),
            (#"{"type": "goal", "team": "home", "scorer": "Saka"}"#, "unknown field 'scorer'"),
            (#"{"type": "goal", "team": "home", "importance": "high"}"#, #"field 'importance' must be one of "critical", "normal", "low""#),
            (#"{"type": "card", "team": "home", "card": "orange"}"#, #"field 'card' must be one of "yellow", "red", "second-yellow""#),
            (#"{"type": "card", "team": "home"}"#, "missing field 'card'"),
            (#"{"type": "penalty", "team": "home", "outcome": "saved"}"#, #"field 'outcome' must be "scored" or "missed""#),
            (#"{"type": "var", "team": "home", "decision": "offside"}"#,
             #"field 'decision' must be one of "goal-disallowed", "goal-confirmed", "penalty-awarded", "penalty-cancelled""#),
            (#"{"type": "var", "team": "home", "decision": "goal-confirmed", "player": "Saka"}"#, "unknown field 'player'"),
            (#"{"type": "status", "status": "paused"}"#, #"field 'status' must be one of "scheduled", "live", "break", "finished""#),
            (#"{"type": "clock"}"#, "missing field 'clockSeconds'"),
            (#"{"type": "clock", "clockSeconds": 21601}"#, "field 'clockSeconds' must be an integer from 0 to 21600"),
            (#"{"type": "clock", "clockSeconds": 60, "clockRunning": 1}"#, "field 'clockRunning' must be true or false"),
            (#"{"type": "period", "period": "first-half-of-the-match"}"#, "field 'period' must be a string of 1 to 16 characters"),
            (#"{"type": "score", "home": 1}"#, "missing field 'away'"),
            (#"{"type": "stats"}"#,
             "a stats event needs at least one of 'homePossession', 'homeShots', 'awayShots', 'homeCorners', 'awayCorners'"),
            (#"{"type": "stats", "homePossession": 101}"#, "field 'homePossession' must be an integer from 0 to 100"),
        ]
        for (json, message) in cases {
            #expect(try rejection(json) == message, "\(json)")
        }
        do {
            _ = try event(#"{"type": "goal", "team": "middle"}"#)
            Issue.record("accepted a bad team")
        } catch let error as EventValidationError {
            #expect(error.field == "team")
        }
    }

    @Test func theStateEncodesWithStableFieldNamesAndReadsBack() throws {
        let state = MatchContentState(status: .live, period: "2H", clockSeconds: 4020, clockRunning: true,
                                      clockStartedAt: 1_767_290_580, homeScore: 2, awayScore: 1, awayRedCards: 1, homeShots: 9, awayShots: 4,
                                      homeCorners: 5, awayCorners: 2, homePossession: 58,
                                      lastIncident: MatchIncident(kind: .goal, team: .home, minute: 67, text: "67' Goal: Saka (ARS)"))
        let expected = #"{"status":"live","period":"2H","clockSeconds":4020,"clockRunning":true,"clockStartedAt":1767290580,"#
            + #""homeScore":2,"awayScore":1,"#
            + #""homeRedCards":0,"awayRedCards":1,"homeShots":9,"awayShots":4,"homeCorners":5,"awayCorners":2,"#
            + #""homePossession":58,"lastIncident":{"kind":"goal","team":"home","minute":67,"text":"67' Goal: Saka (ARS)"}}"#
        #expect(String(decoding: state.json.encoded, as: UTF8.self) == expected)
        #expect(try MatchContentState(json: JSONParser.parse(state.json.encoded)) == state)

        let initial = #"{"status":"scheduled","period":"","clockSeconds":0,"clockRunning":false,"homeScore":0,"awayScore":0,"#
            + #""homeRedCards":0,"awayRedCards":0,"homeShots":0,"awayShots":0,"homeCorners":0,"awayCorners":0}"#
        #expect(String(decoding: MatchContentState.initial.json.encoded, as: UTF8.self) == initial)
        #expect(try MatchContentState(json: JSONParser.parse(Array(initial.utf8))) == .initial)
    }

    @Test func aDamagedStoredStateIsRejected() throws {
        var broken = MatchContentState.initial.json
        broken = broken.applyingMergePatch(["homeScore": "two"])
        #expect(throws: EventValidationError(field: "homeScore", "field 'homeScore' must be an integer from 0 to 999")) {
            try MatchContentState(json: broken)
        }
        let badIncident = MatchContentState.initial.json.applyingMergePatch(["lastIncident": ["kind": "goal", "team": "home"]])
        #expect(throws: EventValidationError(field: "lastIncident.text", "missing field 'lastIncident.text'")) {
            try MatchContentState(json: badIncident)
        }
    }

    @Test func attributesReadAndWriteTheDocumentedJSON() throws {
        let json = #"{"homeName":"Arsenal","homeCode":"ARS","awayName":"Chelsea","awayCode":"CHE","competition":"Premier League","kickoff":1767290400}"#
        // Without `sport`, football (channels created before there were other sports); written with it.
        #expect(try MatchAttributes(json: JSONParser.parse(Array(json.utf8))) == attributes)
        #expect(String(decoding: attributes.json.encoded, as: UTF8.self) == #"{"sport":"football","# + json.dropFirst())
        #expect(throws: EventValidationError(field: "kickoff", "field 'kickoff' must be Unix seconds (a non-negative integer)")) {
            try MatchAttributes(json: attributes.json.applyingMergePatch(["kickoff": "tomorrow"]))
        }
        #expect(throws: EventValidationError(field: "homeCode", "field 'homeCode' must be a string of 1 to 5 characters")) {
            try MatchAttributes(json: attributes.json.applyingMergePatch(["homeCode": "ARSENAL"]))
        }
        #expect(throws: EventValidationError(field: "venue", "unknown field 'venue'")) {
            try MatchAttributes(json: attributes.json.applyingMergePatch(["venue": "Emirates"]))
        }
    }

    @Test func genericPatchEventsAndTheirErrors() throws {
        let json = #"{"seq": 7, "patch": {"home": 2, "last": null}, "importance": "critical", "alert": {"title": "Goal!", "body": "ARS 2-1 CHE", "sound": "default"}}"#
        #expect(try ContentEvent(json: JSONParser.parse(Array(json.utf8)), sport: nil) == .patch(ContentPatchEvent(
            patch: ["home": 2, "last": nil], importance: .critical,
            alert: LiveActivityAlert(title: "Goal!", body: "ARS 2-1 CHE", sound: "default"))))
        #expect(try ContentEvent(json: ["patch": ["a": 1]], sport: .football) == .patch(ContentPatchEvent(patch: ["a": 1])))
        guard case .sports(let goal) = try ContentEvent(json: ["seq": 3, "type": "goal", "team": "away"], sport: .football) else {
            Issue.record("not a sports event")
            return
        }
        #expect(goal.parsed == .football(.goal(team: .away, player: nil, minute: nil, ownGoal: false)))

        let cases: [(JSONValue, String)] = [
            (["patch": [1, 2]], "field 'patch' must be a JSON object (an RFC 7396 merge patch)"),
            (["patch": ["a": 1], "importance": "urgent"], #"field 'importance' must be one of "critical", "normal", "low""#),
            (["patch": ["a": 1], "alert": "Goal!"], "alert must be a JSON object"),
            (["patch": ["a": 1], "alert": ["title": "Goal!"]], "missing field 'alert.body'"),
            (["patch": ["a": 1], "alert": ["title": "Goal!", "body": "1-0", "subtitle": "x"]], "unknown field 'alert.subtitle'"),
            (["patch": ["a": 1], "type": "goal"], "unknown field 'type'"),
            (["seq": 1], "missing field 'type'"),
        ]
        for (value, message) in cases {
            #expect(throws: EventValidationError.self) { try ContentEvent(json: value, sport: .football) }
            do { _ = try ContentEvent(json: value, sport: .football) } catch { #expect(error.description == message) }
        }
    }
}
