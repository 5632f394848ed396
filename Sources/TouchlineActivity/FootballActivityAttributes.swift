import Foundation

/// A football match's Live Activity: the attributes (``MatchInfo``) and the content-state the
/// gateway pushes. In the app: `extension FootballActivityAttributes: ActivityAttributes {}`;
/// the `attributes-type` of a push-to-start is `FootballActivityAttributes`.
public struct FootballActivityAttributes: MatchActivityAttributes {
    public var match: MatchInfo

    public init(match: MatchInfo) { self.match = match }

    public struct ContentState: Codable, Hashable, Sendable {
        public var status: MatchStatus
        /// The provider's period label ("1H", "HT", "2H", "ET1"); "" before the first.
        public var period: String
        /// Elapsed match-clock seconds when last set; while stopped, the time to show.
        public var clockSeconds: Int
        public var clockRunning: Bool
        /// While running: the Unix second at which the clock showed 0:00.
        public var clockStartedAt: Int?
        public var homeScore: Int
        public var awayScore: Int
        public var homeRedCards: Int
        public var awayRedCards: Int
        public var homeShots: Int
        public var awayShots: Int
        public var homeCorners: Int
        public var awayCorners: Int
        /// Home share of possession, percent.
        public var homePossession: Int?
        public var lastIncident: Incident?

        public struct Incident: Codable, Hashable, Sendable {
            public enum Kind: String, Codable, Hashable, Sendable {
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
            public var team: Side
            public var minute: Int?
            /// Ready to show: "67' Goal: Saka (ARS)".
            public var text: String
        }

        /// The start of a running clock, for `Text(timerInterval: start...Date.distantFuture, countsDown: false)`;
        /// nil while stopped (show ``clockSeconds``).
        public var clockStart: Date? { clockRunning ? clockStartedAt?.unixDate : nil }
    }
}
