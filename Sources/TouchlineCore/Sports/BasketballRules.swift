import TouchlineActivity

/// What a provider reports about a basketball game.
public enum BasketballEvent: Sendable, Equatable {
    /// `{"type": "status", "status": "live"}`.
    case status(MatchStatus)
    /// `{"type": "period", "period": "Q2", "clockSeconds": 720, "clockRunning": false}`: a new
    /// period; team fouls start again at 0.
    case period(label: String, clockSeconds: Int?, clockRunning: Bool?)
    /// `{"type": "clock", "clockSeconds": 431, "clockRunning": true}`: the game clock (time left).
    case clock(seconds: Int, running: Bool?)
    /// `{"type": "points", "team": "home", "points": 3, "player": "Curry"}`: a basket (2 or 3)
    /// or a free throw (1).
    case points(team: Team, points: Int, player: String?)
    /// `{"type": "foul", "team": "away", "player": "Tatum"}`: a team foul.
    case foul(team: Team, player: String?)
    /// `{"type": "timeout", "team": "home"}`.
    case timeout(team: Team)
    /// `{"type": "shot-clock", "seconds": 14}`: accepted from feeds that send it, never pushed
    /// (it changes every second; no Live Activity shows it).
    case shotClock(seconds: Int)
    /// `{"type": "score", "home": 71, "away": 68}`: a correction.
    case score(home: Int, away: Int)
}

/// Basketball as a ``SportRules``: quarters and overtime on a count-down clock, points by 1, 2
/// and 3, team fouls per period, timeouts; the shot clock is taken and never pushed.
///
/// Importance: the final buzzer (status `finished`) is critical; points, periods, status,
/// timeouts and corrections are normal; fouls and clock readings are low; the shot clock changes
/// nothing. Basketball scores every 30 s or so, so baskets are normal, not critical: the
/// priority-10 budget (10 an hour) would be gone in the first quarter.
public enum BasketballRules: SportRules {
    public static let sport = Sport.basketball
    public static let eventTypes = ["status", "period", "clock", "points", "foul", "timeout", "shot-clock", "score"]

    public static func initialState(_ attributes: MatchAttributes) -> BasketballContentState { BasketballContentState() }

    public static func event(json: JSONValue) throws(EventValidationError) -> BasketballEvent {
        var fields = try EventFields(json, what: "event", envelope: ["seq", "importance"])
        guard case .string(let type)? = fields.value("type"), eventTypes.contains(type) else {
            throw fields.error("type", "must be \(EventFields.listing(eventTypes))")
        }
        func team() throws(EventValidationError) -> Team { try fields.required(fields.choice("team", Team.self), "team") }
        let event: BasketballEvent
        switch type {
        case "status": event = .status(try fields.required(fields.choice("status", MatchStatus.self), "status"))
        case "period":
            event = .period(label: try fields.required(fields.string("period", maxLength: 16), "period"),
                            clockSeconds: try fields.integer("clockSeconds", in: 0...BasketballContentState.maximumClock),
                            clockRunning: try fields.bool("clockRunning"))
        case "clock":
            event = .clock(seconds: try fields.required(fields.integer("clockSeconds", in: 0...BasketballContentState.maximumClock), "clockSeconds"),
                           running: try fields.bool("clockRunning"))
        case "points":
            event = .points(team: try team(), points: try fields.required(fields.integer("points", in: 1...3), "points"),
                            player: try fields.string("player"))
        case "foul": event = .foul(team: try team(), player: try fields.string("player"))
        case "timeout": event = .timeout(team: try team())
        case "shot-clock": event = .shotClock(seconds: try fields.required(fields.integer("seconds", in: 0...35), "seconds"))
        default:
            event = .score(home: try fields.required(fields.integer("home", in: 0...MatchContentState.maximumCount), "home"),
                           away: try fields.required(fields.integer("away", in: 0...MatchContentState.maximumCount), "away"))
        }
        try fields.rejectUnknown()
        return event
    }

    public static func apply(_ event: BasketballEvent, to state: BasketballContentState, attributes: MatchAttributes, alerts: AlertMode,
                             now: UnixTime) throws(EventValidationError) -> SportChange<BasketballContentState> {
        var state = state
        let now = Int(now.seconds)
        switch event {
        case .status(let status):
            state.status = status
            if status != .live { setClock(nil, running: false, in: &state, at: now) }
            switch status {
            case .live where state.period.isEmpty:
                let teams = [attributes.homeCode, attributes.awayCode]
                return SportChange(state: state, importance: .normal,
                                   alert: alerts.alert(.basketballTipOffTitle, "Tip-off", body: .basketballTeams, teams, text: "\(teams[0]) v \(teams[1])"))
            case .finished:
                let score = [attributes.homeCode, String(state.homeScore), String(state.awayScore), attributes.awayCode]
                return SportChange(state: state, importance: .critical,
                                   alert: alerts.alert(.basketballFinalTitle, "Final", body: .basketballScore, score,
                                                       text: "\(score[0]) \(score[1])-\(score[2]) \(score[3])"))
            default: return SportChange(state: state, importance: .normal)
            }
        case .period(let label, let seconds, let running):
            state.period = label
            (state.homeFouls, state.awayFouls) = (0, 0)
            setClock(seconds, running: running, in: &state, at: now)
            return SportChange(state: state, importance: .normal)
        case .clock(let seconds, let running):
            setClock(seconds, running: running, in: &state, at: now)
            return SportChange(state: state, importance: .low)
        case .points(let team, let points, let player):
            let total = (team == .home ? state.homeScore : state.awayScore) + points
            guard total <= MatchContentState.maximumCount else {
                throw EventValidationError(field: "points", "field 'points' would take the score past \(MatchContentState.maximumCount)")
            }
            if team == .home { state.homeScore = total } else { state.awayScore = total }
            state.lastPlay = BasketballPlay(kind: .points, team: team, points: points,
                                            text: "\(points == 1 ? "Free throw" : "\(points) pts")\(player.map { ": \($0)" } ?? "") (\(attributes.code(of: team)))")
            return SportChange(state: state, importance: .normal)
        case .foul(let team, let player):
            let fouls = (team == .home ? state.homeFouls : state.awayFouls) + 1
            guard fouls <= MatchContentState.maximumCount else { throw EventValidationError(field: "team", "too many fouls in the period") }
            if team == .home { state.homeFouls = fouls } else { state.awayFouls = fouls }
            state.lastPlay = BasketballPlay(kind: .foul, team: team, text: "Foul\(player.map { ": \($0)" } ?? "") (\(attributes.code(of: team)))")
            return SportChange(state: state, importance: .low)
        case .timeout(let team):
            let taken = (team == .home ? state.homeTimeouts : state.awayTimeouts) + 1
            guard taken <= MatchContentState.maximumCount else { throw EventValidationError(field: "team", "too many timeouts") }
            if team == .home { state.homeTimeouts = taken } else { state.awayTimeouts = taken }
            setClock(nil, running: false, in: &state, at: now)
            state.lastPlay = BasketballPlay(kind: .timeout, team: team, text: "Timeout (\(attributes.code(of: team)))")
            return SportChange(state: state, importance: .normal)
        case .shotClock:
            return SportChange(state: state, importance: .low)
        case .score(let home, let away):
            (state.homeScore, state.awayScore) = (home, away)
            return SportChange(state: state, importance: .normal)
        }
    }

    /// Sets the time left and whether the clock runs; without a new reading, a running clock is
    /// first brought down to now (so stopping it freezes the time left). A running clock is
    /// anchored as `clockEndsAt`.
    private static func setClock(_ seconds: Int?, running: Bool?, in state: inout BasketballContentState, at now: Int) {
        if let seconds {
            state.clockSeconds = seconds
        } else if state.clockRunning, let endsAt = state.clockEndsAt {
            state.clockSeconds = min(state.clockSeconds, max(0, endsAt - now))
        }
        if let running { state.clockRunning = running }
        state.clockEndsAt = state.clockRunning ? now + state.clockSeconds : nil
    }

    /// "GSW 71-68 BOS, Q3 7:11".
    public static func summary(_ state: BasketballContentState, _ attributes: MatchAttributes) -> String {
        var line = "\(attributes.homeCode) \(state.homeScore)-\(state.awayScore) \(attributes.awayCode)"
        switch state.status {
        case .scheduled: line += ", not started"
        case .finished: line += ", final"
        case .break: line += ", \(state.period.isEmpty ? "break" : state.period + " break")"
        case .live:
            let seconds = state.clockSeconds % 60
            line += ", \(state.period.isEmpty ? "" : state.period + " ")\(state.clockSeconds / 60):\(seconds < 10 ? "0" : "")\(seconds)"
        }
        return line
    }
}
