/// A tennis match's Live Activity ("home" is the player listed first). In the app:
/// `extension TennisActivityAttributes: ActivityAttributes {}`.
public struct TennisActivityAttributes: MatchActivityAttributes {
    public var match: MatchInfo

    public init(match: MatchInfo) { self.match = match }

    public struct ContentState: Codable, Hashable, Sendable {
        public var status: MatchStatus
        /// Who serves; absent until known.
        public var server: Side?
        /// Games of every set played, the current one last.
        public var sets: [GameCount]
        /// The current game as shown: "0", "15", "30", "40", "AD", or counts in a tie-break.
        public var points: Points
        public var tieBreak: Bool
        public var homeSets: Int
        public var awaySets: Int
        /// The player one point from the match.
        public var matchPoint: Side?
        public var winner: Side?

        public struct GameCount: Codable, Hashable, Sendable {
            public var home: Int
            public var away: Int
        }

        public struct Points: Codable, Hashable, Sendable {
            public var home: String
            public var away: String
        }
    }
}
