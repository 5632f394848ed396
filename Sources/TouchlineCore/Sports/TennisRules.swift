import TouchlineActivity

/// What a provider reports about a tennis match.
public enum TennisEvent: Sendable, Equatable {
    /// `{"type": "status", "status": "live"}` (`break`: a rain delay or the players off court).
    case status(MatchStatus)
    /// `{"type": "point", "team": "home"}`: the point went to that player; the rules keep the
    /// game, the tie-break, the set, the match and the serve.
    case point(team: Team)
    /// `{"type": "server", "team": "away"}`: who serves (at the start, or a correction).
    case server(team: Team)
}

/// Tennis as a ``SportRules``: points with deuce and advantage, games, sets with a tie-break at
/// 6-6 (first to 7, two clear), best of 3 or 5 sets (`attributes.bestOf`), the serve alternating
/// by game and, in a tie-break, after the first point and then every two.
///
/// Importance: a point that wins a set or the match, or that brings a match point, is critical
/// (with an alert); other points are normal; the server is low. The rules decide from the
/// score, so providers send only who won each point. A final set played out without a tie-break
/// (the old advantage set) is not modelled; a provider can still correct the score with a merge
/// patch, held to the same state rules.
public enum TennisRules: SportRules {
    public static let sport = Sport.tennis
    public static let eventTypes = ["status", "point", "server"]

    public static func initialState(_ attributes: MatchAttributes) -> TennisContentState { TennisContentState() }

    public static func event(json: JSONValue) throws(EventValidationError) -> TennisEvent {
        var fields = try EventFields(json, what: "event", envelope: ["seq", "importance"])
        guard case .string(let type)? = fields.value("type"), eventTypes.contains(type) else {
            throw fields.error("type", "must be \(EventFields.listing(eventTypes))")
        }
        let event: TennisEvent
        switch type {
        case "status": event = .status(try fields.required(fields.choice("status", MatchStatus.self), "status"))
        case "point": event = .point(team: try fields.required(fields.choice("team", Team.self), "team"))
        default: event = .server(team: try fields.required(fields.choice("team", Team.self), "team"))
        }
        try fields.rejectUnknown()
        return event
    }

    public static func apply(_ event: TennisEvent, to state: TennisContentState, attributes: MatchAttributes, alerts: AlertMode,
                             now: UnixTime) throws(EventValidationError) -> SportChange<TennisContentState> {
        var state = state
        switch event {
        case .status(let status):
            guard state.winner == nil || status == .finished else {
                throw EventValidationError(field: "status", "the match is over: \(attributes.code(of: state.winner!)) won")
            }
            state.status = status
            return SportChange(state: state, importance: status == .finished ? .critical : .normal)
        case .server(let team):
            state.server = team
            return SportChange(state: state, importance: .low)
        case .point(let team):
            guard state.winner == nil, state.status == .live else {
                throw EventValidationError(field: "type", state.winner != nil ? "a point after the match was won" : "a point needs the match live (status \"live\")")
            }
            let before = state
            let outcome = play(team, in: &state, bestOf: attributes.bestOf ?? 3)
            state.matchPoint = matchPoint(of: state, bestOf: attributes.bestOf ?? 3)
            let alerts = TennisAlerts(attributes: attributes, mode: alerts)
            switch outcome {
            case .match: return SportChange(state: state, importance: .critical, alert: alerts.matchWon(state))
            case .set(let number, let games):
                return SportChange(state: state, importance: .critical, alert: alerts.setWon(team, number: number, games: games))
            case .game, .point:
                if let player = state.matchPoint, before.matchPoint != player {
                    return SportChange(state: state, importance: .critical, alert: alerts.matchPoint(player))
                }
                return SportChange(state: state, importance: .normal)
            }
        }
    }

    /// What a point ended.
    enum Outcome: Equatable {
        case point, game
        /// The set's number (from 1) and its games.
        case set(number: Int, games: TennisSet)
        case match
    }

    /// Plays one point won by `team`.
    static func play(_ team: Team, in state: inout TennisContentState, bestOf: Int) -> Outcome {
        var score = TennisScore(state)!
        if team == .home { score.home += 1 } else { score.away += 1 }
        let (won, lost) = team == .home ? (score.home, score.away) : (score.away, score.home)
        let target = score.tieBreak ? 7 : 4
        guard won >= target && won - lost >= 2 else {
            if score.tieBreak, (score.home + score.away) % 2 == 1 { state.server = state.server.map(\.other) }
            (state.homePoints, state.awayPoints) = score.shown
            return .point
        }
        // The game (or tie-break) is won.
        var current = state.sets[state.sets.count - 1]
        if team == .home { current.home += 1 } else { current.away += 1 }
        state.sets[state.sets.count - 1] = current
        let played = score.home + score.away
        let wasTieBreak = score.tieBreak
        (state.homePoints, state.awayPoints, state.tieBreak) = ("0", "0", false)
        let (games, otherGames) = team == .home ? (current.home, current.away) : (current.away, current.home)
        let setWon = wasTieBreak || (games >= 6 && games - otherGames >= 2)
        if wasTieBreak {
            // The player who received first in the tie-break serves first in the next set.
            let switches = played / 2
            let first = switches % 2 == 1 ? state.server.map(\.other) : state.server
            state.server = first.map(\.other)
        } else {
            state.server = state.server.map(\.other)
        }
        guard setWon else {
            if current.home == 6 && current.away == 6 { state.tieBreak = true }
            return .game
        }
        if team == .home { state.homeSets += 1 } else { state.awaySets += 1 }
        let number = state.sets.count
        if max(state.homeSets, state.awaySets) == (bestOf + 1) / 2 {
            (state.status, state.winner, state.matchPoint) = (.finished, team, nil)
            return .match
        }
        state.sets.append(TennisSet())
        return .set(number: number, games: current)
    }

    /// The player one point from winning the match, if any.
    static func matchPoint(of state: TennisContentState, bestOf: Int) -> Team? {
        guard state.status == .live, state.winner == nil else { return nil }
        return Team.allCases.first { team in
            var next = state
            return play(team, in: &next, bestOf: bestOf) == .match
        }
    }

    /// "ALC 6-4 5-4 40-30 SIN".
    public static func summary(_ state: TennisContentState, _ attributes: MatchAttributes) -> String {
        let sets = state.sets.map(\.text).joined(separator: " ")
        switch state.status {
        case .scheduled: return "\(attributes.homeCode) v \(attributes.awayCode), not started"
        case .finished: return "\(attributes.homeCode) \(sets) \(attributes.awayCode), \(state.winner.map { attributes.code(of: $0) + " won" } ?? "finished")"
        case .live, .break:
            return "\(attributes.homeCode) \(sets) \(state.homePoints)-\(state.awayPoints) \(attributes.awayCode)"
                + (state.status == .break ? ", suspended" : "")
        }
    }
}

extension Team {
    /// The other side.
    var other: Team { self == .home ? .away : .home }
}

/// The alerts of a tennis match's critical moments, as text or as localization keys.
struct TennisAlerts {
    let attributes: MatchAttributes
    let mode: AlertMode

    func setWon(_ team: Team, number: Int, games: TennisSet) -> LiveActivityAlert {
        let (won, lost) = team == .home ? (games.home, games.away) : (games.away, games.home)
        let arguments = [attributes.code(of: team), String(number), String(won), String(lost)]
        return alert(.tennisSetWonTitle, "Set", body: .tennisSetWon, arguments,
                     text: "\(arguments[0]) wins set \(number), \(won)-\(lost)")
    }

    func matchPoint(_ team: Team) -> LiveActivityAlert {
        alert(.tennisMatchPointTitle, "Match point", body: .tennisMatchPoint, [attributes.code(of: team)],
              text: "Match point for \(attributes.code(of: team))")
    }

    func matchWon(_ state: TennisContentState) -> LiveActivityAlert {
        let winner = attributes.code(of: state.winner ?? .home)
        let sets = state.sets.map { state.winner == .away ? "\($0.away)-\($0.home)" : $0.text }.joined(separator: " ")
        return alert(.tennisMatchWonTitle, "Game, set and match", body: .tennisMatchWon, [winner, sets], text: "\(winner) wins \(sets)")
    }

    private func alert(_ title: AlertKey, _ titleText: String, body: AlertKey, _ arguments: [String], text: String) -> LiveActivityAlert {
        mode.alert(title, titleText, body: body, arguments, text: text)
    }
}
