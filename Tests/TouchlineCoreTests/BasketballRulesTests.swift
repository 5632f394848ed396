import Testing
import TouchlineCore

@Suite struct BasketballRulesTests {
    let attributes = MatchAttributes(sport: .basketball, homeName: "Golden State Warriors", homeCode: "GSW", awayName: "Boston Celtics",
                                     awayCode: "BOS", competition: "NBA", kickoff: 1_767_290_400)
    var sports: SportsChannel { SportsChannel(attributes: attributes) }
    static let tipOff: Int64 = 1_767_290_400

    /// Applies events given as JSON text in order, each `spacing` seconds after the last, from the initial state.
    private func play(_ events: [String], spacing: Int64 = 0, from state: BasketballContentState = BasketballContentState()) throws
        -> (state: BasketballContentState, importance: Importance, alert: LiveActivityAlert?) {
        var json = state.json
        var last = (importance: Importance.low, alert: LiveActivityAlert?.none)
        for (index, text) in events.enumerated() {
            let result = try sports.apply(try sports.event(json: JSONParser.parse(Array(text.utf8))), to: json,
                                          now: UnixTime(seconds: Self.tipOff + Int64(index) * spacing))
            (json, last) = (result.state, (result.importance, result.alert))
        }
        return (try BasketballContentState(json: json), last.importance, last.alert)
    }

    @Test func pointsByOneTwoAndThreeScoreAndNameThePlay() throws {
        let result = try play([#"{"type": "points", "team": "home", "points": 3, "player": "Curry"}"#,
                               #"{"type": "points", "team": "away", "points": 2}"#,
                               #"{"type": "points", "team": "away", "points": 1, "player": "Tatum"}"#])
        #expect((result.state.homeScore, result.state.awayScore) == (3, 3))
        #expect(result.state.lastPlay == BasketballPlay(kind: .points, team: .away, points: 1, text: "Free throw: Tatum (BOS)"))
        #expect(result.importance == .normal && result.alert == nil)
        #expect(throws: EventValidationError.self) { try play([#"{"type": "points", "team": "home", "points": 4}"#]) }
    }

    @Test func teamFoulsCountPerPeriodAndTimeoutsStopTheClock() throws {
        let fouls = try play([#"{"type": "period", "period": "Q1", "clockSeconds": 720, "clockRunning": true}"#,
                              #"{"type": "foul", "team": "home", "player": "Green"}"#, #"{"type": "foul", "team": "home"}"#,
                              #"{"type": "timeout", "team": "away"}"#], spacing: 10)
        #expect(fouls.state.homeFouls == 2 && fouls.state.awayTimeouts == 1)
        // The timeout at 30 s stopped the clock 30 s into the quarter.
        #expect(fouls.state.clockRunning == false && fouls.state.clockSeconds == 690 && fouls.state.clockEndsAt == nil)
        #expect(fouls.state.lastPlay?.text == "Timeout (BOS)" && fouls.importance == .normal)
        let next = try play([#"{"type": "period", "period": "Q2", "clockSeconds": 720}"#], from: fouls.state)
        #expect(next.state.homeFouls == 0 && next.state.awayTimeouts == 1)
        #expect(try play([#"{"type": "foul", "team": "away"}"#]).importance == .low)
    }

    @Test func theClockCountsDownFromItsAnchor() throws {
        let running = try play([#"{"type": "clock", "clockSeconds": 431, "clockRunning": true}"#])
        #expect(running.state.clockEndsAt == Int(Self.tipOff) + 431 && running.importance == .low)
        let stopped = try play([#"{"type": "clock", "clockSeconds": 431, "clockRunning": true}"#, #"{"type": "status", "status": "break"}"#],
                               spacing: 100)
        #expect(stopped.state.clockSeconds == 331 && !stopped.state.clockRunning)
    }

    /// The shot clock is taken from feeds that send it and changes nothing, so the channel
    /// engine sees an unchanged state and makes no push.
    @Test func theShotClockIsAcceptedAndNeverChangesTheState() throws {
        let before = try play([#"{"type": "points", "team": "home", "points": 2}"#]).state
        let after = try play([#"{"type": "shot-clock", "seconds": 14}"#], from: before)
        #expect(after.state == before && after.importance == .low)
        #expect(throws: EventValidationError.self) { try play([#"{"type": "shot-clock", "seconds": 40}"#]) }
    }

    @Test func theTipOffAndTheFinalBuzzerAlertAndTheFinalIsCritical() throws {
        let tipOff = try play([#"{"type": "status", "status": "live"}"#])
        #expect(tipOff.importance == .normal && tipOff.alert == LiveActivityAlert(title: "Tip-off", body: "GSW v BOS"))
        let final = try play([#"{"type": "status", "status": "live"}"#, #"{"type": "points", "team": "home", "points": 2}"#,
                              #"{"type": "status", "status": "finished"}"#])
        #expect(final.importance == .critical && final.alert == LiveActivityAlert(title: "Final", body: "GSW 2-0 BOS"))
        #expect(BasketballRules.summary(final.state, attributes) == "GSW 2-0 BOS, final")
    }

    @Test func anotherSportsEventIsNamedAsSuch() {
        #expect(throws: EventValidationError(field: "type", #"field 'type' 'goal' is a football event; a basketball channel takes one of "#
                                                 + #""status", "period", "clock", "points", "foul", "timeout", "shot-clock", "score""#)) {
            try sports.event(json: ["type": "goal", "team": "home"])
        }
        #expect(throws: EventValidationError.self) { try sports.event(json: ["type": "points", "team": "home", "points": 2, "minute": 3]) }
    }

    @Test func theStateIsValidatedAsTheAppDecodesIt() throws {
        let state = try play([#"{"type": "points", "team": "home", "points": 3, "player": "Curry"}"#]).state
        #expect(try BasketballContentState(json: state.json) == state)
        #expect(throws: EventValidationError.self) { try BasketballContentState(json: state.json.applyingMergePatch(["clockSeconds": 4000])) }
        #expect(throws: EventValidationError.self) { try BasketballContentState(json: state.json.applyingMergePatch(["homeRedCards": 1])) }
        #expect(throws: EventValidationError.self) { try BasketballContentState(json: state.json.applyingMergePatch(["lastPlay": ["points": 4]])) }
    }
}
