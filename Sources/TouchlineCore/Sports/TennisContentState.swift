/// What a tennis Live Activity shows, as the app decodes it (`TennisActivityAttributes.ContentState`
/// in `TouchlineActivity`). "Home" is the player listed first in the attributes.
///
/// `{"status": "live", "server": "home", "sets": [{"home": 6, "away": 4}, {"home": 5, "away": 4}],
///   "points": {"home": "40", "away": "30"}, "tieBreak": false, "homeSets": 1, "awaySets": 0, "matchPoint": "home"}`
///
/// `sets` holds the games of every set played, the current one last; `points` the current game
/// as shown (`0`, `15`, `30`, `40`, `AD`, or the count in a tie-break). `matchPoint` names the
/// player one point from the match; `winner` is there once the match is won.
public struct TennisContentState: SportState {
    public var status: MatchStatus
    public var server: Team?
    public var sets: [TennisSet]
    public var homePoints: String
    public var awayPoints: String
    public var tieBreak: Bool
    public var homeSets: Int
    public var awaySets: Int
    public var matchPoint: Team?
    public var winner: Team?

    public init(status: MatchStatus = .scheduled, server: Team? = nil, sets: [TennisSet] = [TennisSet()], homePoints: String = "0",
                awayPoints: String = "0", tieBreak: Bool = false, homeSets: Int = 0, awaySets: Int = 0, matchPoint: Team? = nil,
                winner: Team? = nil) {
        (self.status, self.server, self.sets, self.homePoints, self.awayPoints) = (status, server, sets, homePoints, awayPoints)
        (self.tieBreak, self.homeSets, self.awaySets, self.matchPoint, self.winner) = (tieBreak, homeSets, awaySets, matchPoint, winner)
    }

    /// Points shown in a game: love to forty, then advantage.
    static let gamePoints = ["0", "15", "30", "40", "AD"]
    /// Most sets a match has (best of five).
    static let maximumSets = 5

    public var json: JSONValue {
        var members: [JSONValue.Member] = [.init("status", .string(status.rawValue))]
        if let server { members.append(.init("server", .string(server.rawValue))) }
        members += [
            .init("sets", .array(sets.map(\.json))),
            .init("points", ["home": .string(homePoints), "away": .string(awayPoints)]),
            .init("tieBreak", .bool(tieBreak)),
            .init("homeSets", .integer(Int64(homeSets))), .init("awaySets", .integer(Int64(awaySets))),
        ]
        if let matchPoint { members.append(.init("matchPoint", .string(matchPoint.rawValue))) }
        if let winner { members.append(.init("winner", .string(winner.rawValue))) }
        return .object(members)
    }

    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "tennis state")
        status = try fields.required(fields.choice("status", MatchStatus.self), "status")
        server = try fields.choice("server", Team.self)
        guard case .array(let sets)? = fields.value("sets"), (1...Self.maximumSets).contains(sets.count) else {
            throw fields.error("sets", "must be an array of 1 to \(Self.maximumSets) sets")
        }
        self.sets = try sets.map { (value) throws(EventValidationError) in try TennisSet(json: value) }
        tieBreak = try fields.required(fields.bool("tieBreak"), "tieBreak")
        guard let points = fields.value("points") else { throw fields.error("points", "is missing") }
        var pointFields = try EventFields(points, what: "points", prefix: "points.")
        homePoints = try pointFields.required(pointFields.string("home", maxLength: 3), "home")
        awayPoints = try pointFields.required(pointFields.string("away", maxLength: 3), "away")
        try pointFields.rejectUnknown()
        homeSets = try fields.required(fields.integer("homeSets", in: 0...3), "homeSets")
        awaySets = try fields.required(fields.integer("awaySets", in: 0...3), "awaySets")
        matchPoint = try fields.choice("matchPoint", Team.self)
        winner = try fields.choice("winner", Team.self)
        try fields.rejectUnknown()
        guard TennisScore(self) != nil else {
            throw EventValidationError(field: "points", "field 'points' must be 0, 15, 30, 40 or AD (AD only against 40), or tie-break counts with 'tieBreak'")
        }
    }
}

/// The games of one set.
public struct TennisSet: Sendable, Equatable {
    public var home: Int
    public var away: Int

    public init(home: Int = 0, away: Int = 0) {
        (self.home, self.away) = (home, away)
    }

    public var json: JSONValue { ["home": .integer(Int64(home)), "away": .integer(Int64(away))] }

    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "set", prefix: "sets[].")
        home = try fields.required(fields.integer("home", in: 0...7), "home")
        away = try fields.required(fields.integer("away", in: 0...7), "away")
        try fields.rejectUnknown()
    }

    /// "6-4".
    var text: String { "\(home)-\(away)" }
}

/// The current game as two counts: points won in it (0 to 4 and beyond in a tie-break), read
/// from and written to the shown form. Deuce is 3-3 whatever was played before it.
struct TennisScore: Equatable {
    var home: Int
    var away: Int
    var tieBreak: Bool

    init(home: Int, away: Int, tieBreak: Bool) {
        (self.home, self.away, self.tieBreak) = (home, away, tieBreak)
    }

    /// Nil when the shown points are not a score (an `AD` against 30, "love").
    init?(_ state: TennisContentState) {
        tieBreak = state.tieBreak
        if tieBreak {
            guard let home = Int(state.homePoints), let away = Int(state.awayPoints), (0...99).contains(home), (0...99).contains(away),
                  String(home) == state.homePoints, String(away) == state.awayPoints else { return nil }
            (self.home, self.away) = (home, away)
        } else {
            guard let home = TennisContentState.gamePoints.firstIndex(of: state.homePoints),
                  let away = TennisContentState.gamePoints.firstIndex(of: state.awayPoints),
                  home < 4 && away < 4 || (home == 4 && away == 3) || (home == 3 && away == 4) else { return nil }
            (self.home, self.away) = (home, away)
        }
    }

    /// The shown points.
    var shown: (home: String, away: String) {
        if tieBreak { return (String(home), String(away)) }
        if home >= 3 && away >= 3 {
            return home == away ? ("40", "40") : home > away ? ("AD", "40") : ("40", "AD")
        }
        return (TennisContentState.gamePoints[home], TennisContentState.gamePoints[away])
    }
}
