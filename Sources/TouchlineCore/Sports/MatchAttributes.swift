/// The static facts of a match, given when its channel is created and sent as the Live
/// Activity `attributes` on push-to-start. The reducer uses the short codes in alerts
/// ("ARS 2-1 CHE").
///
/// JSON (field names identical to the app's `MatchAttributes`):
/// `{"homeName": "Arsenal", "homeCode": "ARS", "awayName": "Chelsea", "awayCode": "CHE",
///   "competition": "Premier League", "kickoff": 1767290400}`.
public struct MatchAttributes: Sendable, Equatable {
    public var homeName: String
    /// Short code shown in alerts and compact views, e.g. "ARS".
    public var homeCode: String
    public var awayName: String
    public var awayCode: String
    public var competition: String
    /// Scheduled kick-off, Unix seconds.
    public var kickoff: Int64

    public init(homeName: String, homeCode: String, awayName: String, awayCode: String, competition: String, kickoff: Int64) {
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
        homeName = try fields.required(fields.string("homeName"), "homeName")
        homeCode = try fields.required(fields.string("homeCode", maxLength: 5), "homeCode")
        awayName = try fields.required(fields.string("awayName"), "awayName")
        awayCode = try fields.required(fields.string("awayCode", maxLength: 5), "awayCode")
        competition = try fields.required(fields.string("competition"), "competition")
        guard case .integer(let kickoff) = try fields.required(fields.value("kickoff"), "kickoff"), kickoff >= 0 else {
            throw fields.error("kickoff", "must be Unix seconds (a non-negative integer)")
        }
        self.kickoff = kickoff
        try fields.rejectUnknown()
    }

    public var json: JSONValue {
        ["homeName": .string(homeName), "homeCode": .string(homeCode), "awayName": .string(awayName),
         "awayCode": .string(awayCode), "competition": .string(competition), "kickoff": .integer(kickoff)]
    }

    /// The short code of one side.
    public func code(of team: Team) -> String { team == .home ? homeCode : awayCode }
}

/// One side of a match, as written in events and incidents.
public enum Team: String, Sendable, CaseIterable {
    case home
    case away
}
