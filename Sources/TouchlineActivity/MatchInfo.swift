import Foundation

/// The static facts of a match every sport's attributes carry, in the flat JSON the gateway
/// writes (`attributes` of a channel, and of a push-to-start): `{"sport": "football",
/// "homeName": "Arsenal", "homeCode": "ARS", "awayName": "Chelsea", "awayCode": "CHE",
/// "competition": "Premier League", "kickoff": 1767290400}` (tennis adds `"bestOf": 3`).
public struct MatchInfo: Codable, Hashable, Sendable {
    /// `football`, `basketball` or `tennis`; absent in attributes written before there were
    /// other sports (football).
    public var sport: String?
    public var homeName: String
    /// Short code shown in compact views and alerts: "ARS".
    public var homeCode: String
    public var awayName: String
    public var awayCode: String
    public var competition: String
    /// Scheduled start, Unix seconds.
    public var kickoff: Int
    /// Tennis: sets in the match (3 or 5).
    public var bestOf: Int?

    public init(sport: String? = nil, homeName: String, homeCode: String, awayName: String, awayCode: String, competition: String,
                kickoff: Int, bestOf: Int? = nil) {
        (self.sport, self.homeName, self.homeCode, self.awayName, self.awayCode) = (sport, homeName, homeCode, awayName, awayCode)
        (self.competition, self.kickoff, self.bestOf) = (competition, kickoff, bestOf)
    }

    /// The scheduled start as a date.
    public var kickoffDate: Date { Date(timeIntervalSince1970: TimeInterval(kickoff)) }
}

/// Where a match is in its life.
public enum MatchStatus: String, Codable, Hashable, Sendable {
    case scheduled, live, `break`, finished
}

/// A side: the home team, or in tennis the player listed first.
public enum Side: String, Codable, Hashable, Sendable {
    case home, away
}

/// An attributes type whose JSON is the match's flat attributes: each sport's
/// `...ActivityAttributes` is one, with its own `ContentState`.
public protocol MatchActivityAttributes: Codable, Hashable, Sendable {
    var match: MatchInfo { get }
    init(match: MatchInfo)
}

extension MatchActivityAttributes {
    /// Reads the flat attributes JSON into ``match``.
    public init(from decoder: any Decoder) throws { self.init(match: try MatchInfo(from: decoder)) }
    /// Writes ``match`` as the flat attributes JSON.
    public func encode(to encoder: any Encoder) throws { try match.encode(to: encoder) }
}

extension Int {
    /// Unix seconds as a date (the content-states carry times as Int Unix seconds: the system
    /// decodes them with a default `JSONDecoder`, which would read a `Date` differently).
    var unixDate: Date { Date(timeIntervalSince1970: TimeInterval(self)) }
}
