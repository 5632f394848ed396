/// What a basketball Live Activity shows, as the app decodes it (`BasketballActivityAttributes.ContentState`
/// in `TouchlineActivity`). The game clock counts down: while it runs, `clockEndsAt` is the
/// Unix second at which the period's clock reaches 0:00, so the app counts down on its own.
///
/// `{"status": "live", "period": "Q3", "clockSeconds": 431, "clockRunning": true, "clockEndsAt": 1767291000,
///   "homeScore": 71, "awayScore": 68, "homeFouls": 3, "awayFouls": 4, "homeTimeouts": 2, "awayTimeouts": 3,
///   "lastPlay": {"kind": "points", "team": "home", "points": 3, "text": "3 pts: Curry (GSW)"}}`
public struct BasketballContentState: SportState {
    public var status: MatchStatus
    /// The provider's label ("Q1"..."Q4", "OT1"); "" before the first period.
    public var period: String
    /// Time left in the period when the clock was last set (while stopped: the time shown).
    public var clockSeconds: Int
    public var clockRunning: Bool
    /// While running: the Unix second at which the period clock shows 0:00.
    public var clockEndsAt: Int?
    public var homeScore: Int
    public var awayScore: Int
    /// Team fouls in the current period (a new period starts them at 0).
    public var homeFouls: Int
    public var awayFouls: Int
    /// Timeouts taken in the game.
    public var homeTimeouts: Int
    public var awayTimeouts: Int
    public var lastPlay: BasketballPlay?

    /// Longest period clock a state may hold (a college half is 20 minutes).
    public static let maximumClock = 3600

    public init(status: MatchStatus = .scheduled, period: String = "", clockSeconds: Int = 0, clockRunning: Bool = false,
                clockEndsAt: Int? = nil, homeScore: Int = 0, awayScore: Int = 0, homeFouls: Int = 0, awayFouls: Int = 0,
                homeTimeouts: Int = 0, awayTimeouts: Int = 0, lastPlay: BasketballPlay? = nil) {
        (self.status, self.period, self.clockSeconds, self.clockRunning, self.clockEndsAt) = (status, period, clockSeconds, clockRunning, clockEndsAt)
        (self.homeScore, self.awayScore, self.homeFouls, self.awayFouls) = (homeScore, awayScore, homeFouls, awayFouls)
        (self.homeTimeouts, self.awayTimeouts, self.lastPlay) = (homeTimeouts, awayTimeouts, lastPlay)
    }

    public var json: JSONValue {
        var members: [JSONValue.Member] = [
            .init("status", .string(status.rawValue)), .init("period", .string(period)),
            .init("clockSeconds", .integer(Int64(clockSeconds))), .init("clockRunning", .bool(clockRunning)),
        ]
        if let clockEndsAt { members.append(.init("clockEndsAt", .integer(Int64(clockEndsAt)))) }
        members += [
            .init("homeScore", .integer(Int64(homeScore))), .init("awayScore", .integer(Int64(awayScore))),
            .init("homeFouls", .integer(Int64(homeFouls))), .init("awayFouls", .integer(Int64(awayFouls))),
            .init("homeTimeouts", .integer(Int64(homeTimeouts))), .init("awayTimeouts", .integer(Int64(awayTimeouts))),
        ]
        if let lastPlay { members.append(.init("lastPlay", lastPlay.json)) }
        return .object(members)
    }

    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "basketball state")
        func count(_ name: String, _ fields: inout EventFields) throws(EventValidationError) -> Int {
            try fields.required(fields.integer(name, in: 0...MatchContentState.maximumCount), name)
        }
        status = try fields.required(fields.choice("status", MatchStatus.self), "status")
        guard case .string(let period)? = fields.value("period"), period.count <= 16 else {
            throw fields.error("period", "must be a string of at most 16 characters")
        }
        self.period = period
        clockSeconds = try fields.required(fields.integer("clockSeconds", in: 0...Self.maximumClock), "clockSeconds")
        clockRunning = try fields.required(fields.bool("clockRunning"), "clockRunning")
        clockEndsAt = try fields.integer("clockEndsAt", in: 0...Int(Int64.max))
        homeScore = try count("homeScore", &fields)
        awayScore = try count("awayScore", &fields)
        homeFouls = try count("homeFouls", &fields)
        awayFouls = try count("awayFouls", &fields)
        homeTimeouts = try count("homeTimeouts", &fields)
        awayTimeouts = try count("awayTimeouts", &fields)
        lastPlay = try fields.value("lastPlay").map { (value) throws(EventValidationError) in try BasketballPlay(json: value) }
        try fields.rejectUnknown()
    }
}

/// The latest scoring play, foul or timeout, as the app shows it.
public struct BasketballPlay: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case points, foul, timeout
    }

    public var kind: Kind
    public var team: Team
    /// 1, 2 or 3 on a scoring play.
    public var points: Int?
    /// Ready-to-show text: "3 pts: Curry (GSW)", "Foul: Green (GSW)", "Timeout (BOS)".
    public var text: String

    public init(kind: Kind, team: Team, points: Int? = nil, text: String) {
        (self.kind, self.team, self.points, self.text) = (kind, team, points, text)
    }

    public var json: JSONValue {
        var members: [JSONValue.Member] = [.init("kind", .string(kind.rawValue)), .init("team", .string(team.rawValue))]
        if let points { members.append(.init("points", .integer(Int64(points)))) }
        members.append(.init("text", .string(text)))
        return .object(members)
    }

    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "lastPlay", prefix: "lastPlay.")
        kind = try fields.required(fields.choice("kind", Kind.self), "kind")
        team = try fields.required(fields.choice("team", Team.self), "team")
        points = try fields.integer("points", in: 1...3)
        text = try fields.required(fields.string("text", maxLength: 256), "text")
        try fields.rejectUnknown()
    }
}
