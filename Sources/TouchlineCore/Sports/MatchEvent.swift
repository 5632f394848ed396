/// What a score provider reports about a football match; `FootballReducer` folds these into a
/// `MatchContentState`. The JSON form is documented in docs/content-state.md; every event
/// is an object with a `type` and the fields of that type, nothing else.
public enum MatchEvent: Sendable, Equatable {
    /// `{"type": "score", "home": 2, "away": 1}`: sets the score (a correction; goals are `goal`).
    case score(home: Int, away: Int)
    /// `{"type": "period", "period": "2H", "clockSeconds": 2700, "clockRunning": true}`:
    /// a new period label, optionally resetting the clock.
    case period(label: String, clockSeconds: Int?, clockRunning: Bool?)
    /// `{"type": "clock", "clockSeconds": 2712, "clockRunning": true}`: a clock tick.
    case clock(seconds: Int, running: Bool?)
    /// `{"type": "status", "status": "live"}`.
    case status(MatchStatus)
    /// `{"type": "goal", "team": "home", "player": "Saka", "minute": 67, "ownGoal": false}`;
    /// `team` is the side the goal counts for.
    case goal(team: Team, player: String?, minute: Int?, ownGoal: Bool)
    /// `{"type": "card", "team": "away", "card": "red", "player": "Jorginho", "minute": 55}`.
    case card(team: Team, card: Card, player: String?, minute: Int?)
    /// `{"type": "penalty", "team": "home", "outcome": "scored", "player": "Saka", "minute": 30}`:
    /// an in-play penalty; a scored one counts as a goal.
    case penalty(team: Team, outcome: PenaltyOutcome, player: String?, minute: Int?)
    /// `{"type": "substitution", "team": "home", "playerIn": "Havertz", "playerOut": "Saka", "minute": 80}`.
    case substitution(team: Team, playerIn: String?, playerOut: String?, minute: Int?)
    /// `{"type": "var", "team": "home", "decision": "goal-disallowed", "minute": 70}`; `team`
    /// is the side the decision is about (whose goal is disallowed, who is awarded the penalty).
    case varDecision(team: Team, decision: VARDecision, minute: Int?)
    /// `{"type": "stats", "homePossession": 55, "homeShots": 7, "awayShots": 3}`: at least one figure.
    case stats(MatchStatsUpdate)

    /// The importance of this kind of event when the provider does not say.
    public var defaultImportance: Importance {
        switch self {
        case .goal, .penalty: .critical
        case .card(_, let card, _, _): card == .yellow ? .normal : .critical
        case .varDecision(_, let decision, _): decision == .goalDisallowed ? .critical : .normal
        case .status(let status): status == .finished ? .critical : .normal
        case .score, .period, .substitution: .normal
        case .clock, .stats: .low
        }
    }
}

public enum MatchStatus: String, Sendable, CaseIterable {
    case scheduled
    case live
    /// Half-time or another interval; the clock stops.
    case `break`
    case finished
}

public enum Card: String, Sendable, CaseIterable {
    case yellow
    case red
    /// A second yellow: the player is sent off, counted as a red card.
    case secondYellow = "second-yellow"
}

public enum PenaltyOutcome: String, Sendable, CaseIterable {
    case scored
    case missed
}

public enum VARDecision: String, Sendable, CaseIterable {
    /// Takes the goal back: the side's score goes down by one.
    case goalDisallowed = "goal-disallowed"
    case goalConfirmed = "goal-confirmed"
    case penaltyAwarded = "penalty-awarded"
    case penaltyCancelled = "penalty-cancelled"
}

/// The figures a `stats` event sets; `nil` leaves a figure as it was.
public struct MatchStatsUpdate: Sendable, Equatable {
    /// The home side's share of possession in percent (the away share is the rest).
    public var homePossession: Int?
    public var homeShots: Int?
    public var awayShots: Int?
    public var homeCorners: Int?
    public var awayCorners: Int?

    public init(homePossession: Int? = nil, homeShots: Int? = nil, awayShots: Int? = nil, homeCorners: Int? = nil, awayCorners: Int? = nil) {
        self.homePossession = homePossession
        self.homeShots = homeShots
        self.awayShots = awayShots
        self.homeCorners = homeCorners
        self.awayCorners = awayCorners
    }
}

extension MatchEvent {
    /// Parses and validates one football event (its `type` and that type's fields; `seq` and
    /// `importance` are the envelope's), refusing unknown fields and naming the first bad one.
    init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "event", envelope: ["seq", "importance"])
        guard case .string(let type)? = fields.value("type"), let kind = EventType(rawValue: type) else {
            throw fields.error("type", "must be \(EventFields.listing(EventType.allCases.map(\.rawValue)))")
        }
        self = try kind.parse(&fields)
        try fields.rejectUnknown()
    }

    /// The `type` values of football events.
    static var types: [String] { EventType.allCases.map(\.rawValue) }
}

/// The `type` values and the fields each one reads.
private enum EventType: String, CaseIterable {
    case score, period, clock, status, goal, card, penalty, substitution
    case varDecision = "var"
    case stats

    static let maximumMinute = 200
    /// Six hours of match clock is beyond any real match, including extra time and delays.
    static let maximumClock = 6 * 3600
    static let maximumScore = MatchContentState.maximumCount

    func parse(_ fields: inout EventFields) throws(EventValidationError) -> MatchEvent {
        switch self {
        case .score:
            let home = try fields.required(fields.integer("home", in: 0...Self.maximumScore), "home")
            let away = try fields.required(fields.integer("away", in: 0...Self.maximumScore), "away")
            return .score(home: home, away: away)
        case .period:
            return .period(label: try fields.required(fields.string("period", maxLength: 16), "period"),
                           clockSeconds: try fields.integer("clockSeconds", in: 0...Self.maximumClock),
                           clockRunning: try fields.bool("clockRunning"))
        case .clock:
            return .clock(seconds: try fields.required(fields.integer("clockSeconds", in: 0...Self.maximumClock), "clockSeconds"),
                          running: try fields.bool("clockRunning"))
        case .status:
            return .status(try fields.required(fields.choice("status", MatchStatus.self), "status"))
        case .goal:
            return .goal(team: try team(&fields), player: try fields.string("player"), minute: try minute(&fields),
                         ownGoal: try fields.bool("ownGoal") ?? false)
        case .card:
            return .card(team: try team(&fields), card: try fields.required(fields.choice("card", Card.self), "card"),
                         player: try fields.string("player"), minute: try minute(&fields))
        case .penalty:
            return .penalty(team: try team(&fields), outcome: try fields.required(fields.choice("outcome", PenaltyOutcome.self), "outcome"),
                            player: try fields.string("player"), minute: try minute(&fields))
        case .substitution:
            return .substitution(team: try team(&fields), playerIn: try fields.string("playerIn"),
                                 playerOut: try fields.string("playerOut"), minute: try minute(&fields))
        case .varDecision:
            return .varDecision(team: try team(&fields), decision: try fields.required(fields.choice("decision", VARDecision.self), "decision"),
                                minute: try minute(&fields))
        case .stats:
            let update = MatchStatsUpdate(
                homePossession: try fields.integer("homePossession", in: 0...100),
                homeShots: try fields.integer("homeShots", in: 0...Self.maximumScore),
                awayShots: try fields.integer("awayShots", in: 0...Self.maximumScore),
                homeCorners: try fields.integer("homeCorners", in: 0...Self.maximumScore),
                awayCorners: try fields.integer("awayCorners", in: 0...Self.maximumScore))
            guard update != MatchStatsUpdate() else {
                throw EventValidationError(field: nil, "a stats event needs at least one of 'homePossession', 'homeShots', 'awayShots', 'homeCorners', 'awayCorners'")
            }
            return .stats(update)
        }
    }

    private func team(_ fields: inout EventFields) throws(EventValidationError) -> Team {
        try fields.required(fields.choice("team", Team.self), "team")
    }

    private func minute(_ fields: inout EventFields) throws(EventValidationError) -> Int? {
        try fields.integer("minute", in: 0...Self.maximumMinute)
    }
}
