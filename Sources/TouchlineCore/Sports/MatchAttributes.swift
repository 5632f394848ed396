/// The static facts of a match, given when its channel is created and sent as the Live
/// Activity `attributes` on push-to-start. The reducer uses the short codes in alerts
/// ("ARS 2-1 CHE").
///
/// JSON (field names identical to the app's attributes types in `TouchlineActivity`):
/// `{"sport": "football", "homeName": "Arsenal", "homeCode": "ARS", "awayName": "Chelsea",
///   "awayCode": "CHE", "competition": "Premier League", "kickoff": 1767290400}`. `sport` is
/// `football` when left out (channels created before there were other sports). In tennis the
/// "home" side is the player listed first, and `bestOf` (3 or 5 sets, default 3) is allowed.
public struct MatchAttributes: Sendable, Equatable {
    /// Which rules fold the channel's events (``Sport``).
    public var sport: Sport
    public var homeName: String
    /// Short code shown in alerts and compact views, e.g. "ARS".
    public var homeCode: String
    public var awayName: String
    public var awayCode: String
    public var competition: String
    /// Scheduled kick-off, Unix seconds.
    public var kickoff: Int64
    /// Tennis only: the sets the match is played over (3 or 5); nil in other sports.
    public var bestOf: Int?

    public init(sport: Sport = .football, homeName: String, homeCode: String, awayName: String, awayCode: String, competition: String,
                kickoff: Int64, bestOf: Int? = nil) {
        self.sport = sport
        self.bestOf = sport == .tennis ? (bestOf ?? 3) : nil
        self.homeName = homeName
        self.homeCode = homeCode
        self.awayName = awayName
        self.awayCode = awayCode
        self.competition = competition
        self.kickoff = kickoff
    }

    /// Reads attributes from a provider's channel-creation body, refusing unknown fields.
    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "match attributes")
        sport = try fields.choice("sport", Sport.self) ?? .football
        homeName = try fields.required(fields.string("homeName"), "homeName")
        homeCode = try fields.required(fields.string("homeCode", maxLength: 5), "homeCode")
        awayName = try fields.required(fields.string("awayName"), "awayName")
        awayCode = try fields.required(fields.string("awayCode", maxLength: 5), "awayCode")
        competition = try fields.required(fields.string("competition"), "competition")
        guard case .integer(let kickoff) = try fields.required(fields.value("kickoff"), "kickoff"), kickoff >= 0 else {
            throw fields.error("kickoff", "must be Unix seconds (a non-negative integer)")
        }
        self.kickoff = kickoff
        if sport == .tennis {
            let sets = try fields.integer("bestOf", in: 3...5) ?? 3
            guard sets == 3 || sets == 5 else { throw fields.error("bestOf", "must be 3 or 5") }
            bestOf = sets
        } else {
            bestOf = nil
            if fields.value("bestOf") != nil { throw fields.error("bestOf", "is for tennis only (sets in the match)") }
        }
        try fields.rejectUnknown()
    }

    public var json: JSONValue {
        var members: [JSONValue.Member] = [
            .init("sport", .string(sport.rawValue)), .init("homeName", .string(homeName)), .init("homeCode", .string(homeCode)),
            .init("awayName", .string(awayName)), .init("awayCode", .string(awayCode)), .init("competition", .string(competition)),
            .init("kickoff", .integer(kickoff)),
        ]
        if let bestOf { members.append(.init("bestOf", .integer(Int64(bestOf)))) }
        return .object(members)
    }

    /// The short code of one side.
    public func code(of team: Team) -> String { team == .home ? homeCode : awayCode }
}

/// One side of a match, as written in events and incidents.
public enum Team: String, Sendable, CaseIterable {
    case home
    case away
}
