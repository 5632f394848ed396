/// The content-state of a match Live Activity: what the app renders, kept by the gateway and
/// sent whole in every push. Times are integer seconds; field names are those of the app's
/// `ContentState` (docs/content-state.md), in this order:
///
/// `{"status": "live", "period": "2H", "clockSeconds": 4020, "clockRunning": true,
///   "clockStartedAt": 1767290580, "homeScore": 2, "awayScore": 1, "homeRedCards": 0, "awayRedCards": 1,
///   "homeShots": 9, "awayShots": 4, "homeCorners": 5, "awayCorners": 2, "homePossession": 58,
///   "lastIncident": {"kind": "goal", "team": "home", "minute": 67, "text": "67' Goal: Saka (ARS)"}}`
///
/// `clockStartedAt`, `homePossession` and `lastIncident` are left out while unknown.
public struct MatchContentState: Sendable, Equatable {
    public var status: MatchStatus
    /// Free label chosen by the provider: "1H", "HT", "2H", "ET1", "PEN"...; empty before kick-off.
    public var period: String
    /// Match clock, elapsed seconds, as last set (while stopped: the time shown).
    public var clockSeconds: Int
    /// Whether the clock is counting.
    public var clockRunning: Bool
    /// While the clock runs: the Unix second at which it would have shown zero, so the app can
    /// count on its own between pushes (`Text(timerInterval:)`); `nil` while stopped.
    public var clockStartedAt: Int?
    public var homeScore: Int
    public var awayScore: Int
    public var homeRedCards: Int
    public var awayRedCards: Int
    public var homeShots: Int
    public var awayShots: Int
    public var homeCorners: Int
    public var awayCorners: Int
    /// Home share of possession in percent; `nil` until a provider reports it.
    public var homePossession: Int?
    /// The most recent notable incident, for the activity's headline.
    public var lastIncident: MatchIncident?

    /// A match before kick-off: scheduled, nothing on the board.
    public static let initial = MatchContentState()

    public init(status: MatchStatus = .scheduled, period: String = "", clockSeconds: Int = 0, clockRunning: Bool = false,
                clockStartedAt: Int? = nil, homeScore: Int = 0, awayScore: Int = 0, homeRedCards: Int = 0, awayRedCards: Int = 0,
                homeShots: Int = 0, awayShots: Int = 0, homeCorners: Int = 0, awayCorners: Int = 0,
                homePossession: Int? = nil, lastIncident: MatchIncident? = nil) {
        self.status = status
        self.period = period
        self.clockSeconds = clockSeconds
        self.clockRunning = clockRunning
        self.clockStartedAt = clockStartedAt
        self.homeScore = homeScore
        self.awayScore = awayScore
        self.homeRedCards = homeRedCards
        self.awayRedCards = awayRedCards
        self.homeShots = homeShots
        self.awayShots = awayShots
        self.homeCorners = homeCorners
        self.awayCorners = awayCorners
        self.homePossession = homePossession
        self.lastIncident = lastIncident
    }

    /// The content-state JSON of a push.
    public var json: JSONValue {
        var members: [JSONValue.Member] = [
            .init("status", .string(status.rawValue)), .init("period", .string(period)),
            .init("clockSeconds", .integer(Int64(clockSeconds))), .init("clockRunning", .bool(clockRunning)),
        ]
        if let clockStartedAt { members.append(.init("clockStartedAt", .integer(Int64(clockStartedAt)))) }
        members += [
            .init("homeScore", .integer(Int64(homeScore))), .init("awayScore", .integer(Int64(awayScore))),
            .init("homeRedCards", .integer(Int64(homeRedCards))), .init("awayRedCards", .integer(Int64(awayRedCards))),
            .init("homeShots", .integer(Int64(homeShots))), .init("awayShots", .integer(Int64(awayShots))),
            .init("homeCorners", .integer(Int64(homeCorners))), .init("awayCorners", .integer(Int64(awayCorners))),
        ]
        if let homePossession { members.append(.init("homePossession", .integer(Int64(homePossession)))) }
        if let lastIncident { members.append(.init("lastIncident", lastIncident.json)) }
        return .object(members)
    }

    /// Largest score, card, shot or corner count a state may hold: the events' own bound, so a
    /// state folded from valid events always reads back (a goal past it is refused instead).
    public static let maximumCount = 999

    /// Reads and validates a state: a stored state after a restart, a provider's patched or
    /// initial state, and every state the reducer makes, against one set of bounds.
    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "match state")
        func number(_ name: String, _ fields: inout EventFields) throws(EventValidationError) -> Int {
            try fields.required(fields.integer(name, in: 0...Self.maximumCount), name)
        }
        status = try fields.required(fields.choice("status", MatchStatus.self), "status")
        guard case .string(let period)? = fields.value("period"), period.count <= 64 else {
            throw fields.error("period", "must be a string of at most 64 characters")
        }
        self.period = period
        clockSeconds = try fields.required(fields.integer("clockSeconds", in: 0...Int(Int32.max)), "clockSeconds")
        clockRunning = try fields.required(fields.bool("clockRunning"), "clockRunning")
        clockStartedAt = try fields.integer("clockStartedAt", in: 0...Int(Int64.max))
        homeScore = try number("homeScore", &fields)
        awayScore = try number("awayScore", &fields)
        homeRedCards = try number("homeRedCards", &fields)
        awayRedCards = try number("awayRedCards", &fields)
        homeShots = try number("homeShots", &fields)
        awayShots = try number("awayShots", &fields)
        homeCorners = try number("homeCorners", &fields)
        awayCorners = try number("awayCorners", &fields)
        homePossession = try fields.integer("homePossession", in: 0...100)
        lastIncident = try fields.value("lastIncident").map { (value) throws(EventValidationError) in try MatchIncident(json: value) }
        try fields.rejectUnknown()
    }
}

/// A notable moment (goal, card, penalty, substitution, VAR decision) as the app shows it.
public struct MatchIncident: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case goal
        case ownGoal = "own-goal"
        case yellowCard = "yellow-card"
        case redCard = "red-card"
        case secondYellow = "second-yellow"
        case penaltyScored = "penalty-scored"
        case penaltyMissed = "penalty-missed"
        case substitution
        case varDecision = "var"
    }

    public var kind: Kind
    /// The side the incident counts for.
    public var team: Team
    public var minute: Int?
    /// Ready-to-show text, e.g. "67' Goal: Saka (ARS)".
    public var text: String

    public init(kind: Kind, team: Team, minute: Int?, text: String) {
        self.kind = kind
        self.team = team
        self.minute = minute
        self.text = text
    }

    public var json: JSONValue {
        var members: [JSONValue.Member] = [.init("kind", .string(kind.rawValue)), .init("team", .string(team.rawValue))]
        if let minute { members.append(.init("minute", .integer(Int64(minute)))) }
        members.append(.init("text", .string(text)))
        return .object(members)
    }

    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "lastIncident", prefix: "lastIncident.")
        kind = try fields.required(fields.choice("kind", Kind.self), "kind")
        team = try fields.required(fields.choice("team", Team.self), "team")
        minute = try fields.integer("minute", in: 0...Int(Int32.max))
        text = try fields.required(fields.string("text", maxLength: 256), "text")
        try fields.rejectUnknown()
    }
}
