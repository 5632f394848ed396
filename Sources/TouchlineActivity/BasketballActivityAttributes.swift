import Foundation

/// A basketball game's Live Activity. In the app:
/// `extension BasketballActivityAttributes: ActivityAttributes {}`.
public struct BasketballActivityAttributes: MatchActivityAttributes {
    public var match: MatchInfo

    public init(match: MatchInfo) { self.match = match }

    public struct ContentState: Codable, Hashable, Sendable {
        public var status: MatchStatus
        /// "Q1"..."Q4", "OT1"; "" before the first period.
        public var period: String
        /// Time left in the period when last set; while stopped, the time to show.
        public var clockSeconds: Int
        public var clockRunning: Bool
        /// While running: the Unix second at which the period clock shows 0:00.
        public var clockEndsAt: Int?
        public var homeScore: Int
        public var awayScore: Int
        /// Team fouls in the current period.
        public var homeFouls: Int
        public var awayFouls: Int
        /// Timeouts taken in the game.
        public var homeTimeouts: Int
        public var awayTimeouts: Int
        public var lastPlay: Play?

        public struct Play: Codable, Hashable, Sendable {
            public enum Kind: String, Codable, Hashable, Sendable {
                case points, foul, timeout
            }

            public var kind: Kind
            public var team: Side
            /// 1, 2 or 3 on a scoring play.
            public var points: Int?
            /// Ready to show: "3 pts: Curry (GSW)".
            public var text: String
        }

        /// The end of a running period clock, for `Text(timerInterval: Date.now...end, countsDown: true)`;
        /// nil while stopped (show ``clockSeconds``).
        public var clockEnd: Date? { clockRunning ? clockEndsAt?.unixDate : nil }
    }
}
