/// What a `matchday` run plays: how many matches, how their 90 minutes are compressed into real
/// time, how often each kind of event comes, and the seed that makes it all replayable.
///
/// The defaults give a full match day in about two minutes: 300 matches kicking off within the
/// first 10 s, one real second per match minute, an 8 s half-time break.
public struct MatchdayOptions: Sendable, Equatable {
    /// Concurrent matches, one channel each.
    public var matches = 300
    /// Real seconds for the 90 match minutes (the half-time break comes on top).
    public var matchSeconds = 90.0
    /// Real seconds of the half-time break.
    public var halfTimeSeconds = 8.0
    /// Kickoffs are spread uniformly over this many seconds from the start of the run.
    public var kickoffSpreadSeconds = 10.0
    /// Real seconds between clock ticks while the match clock runs.
    public var clockTickSeconds = 1.0
    /// Mean real seconds between two stats updates while the clock runs...
    public var statsIntervalSeconds = 5.0
    /// ...each interval drawn uniformly within this many seconds of the mean.
    public var statsJitterSeconds = 1.0
    /// Mean goals per match (Poisson).
    public var goalsPerMatch = 2.7
    /// Mean yellow cards per match (Poisson).
    public var yellowCardsPerMatch = 3.5
    /// Mean red cards per match (Poisson).
    public var redCardsPerMatch = 0.15
    /// Substitutions each team makes, in the second half.
    public var substitutionsPerTeam = 3...5
    /// Real seconds from the final whistle to the channel's end, drawn uniformly.
    public var endDelaySeconds = 1.0...2.0
    /// The ended activity leaves the Lock Screen this many seconds after the end is sent (`dismissAt`).
    public var dismissAfterSeconds = 300
    /// Channel ids are this prefix and the match number from 1, four digits at least (`match-0001`).
    public var channelPrefix = "match-"
    /// The channels' `policy` as a JSON object text; `nil` leaves the gateway's default policy.
    public var policyJSON: String?
    /// The same seed gives the same match day.
    public var seed: UInt64 = 1

    public init() {}

    /// Options that cannot make a match day, with the reason.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Throws when a value would make no match day, or one that never ends.
    public func validate() throws(Invalid) {
        func require(_ condition: Bool, _ reason: String) throws(Invalid) {
            guard condition else { throw Invalid(description: "matchday options: \(reason)") }
        }
        try require(matches >= 1, "matches must be at least 1, got \(matches)")
        try require(matchSeconds > 0 && halfTimeSeconds >= 0 && kickoffSpreadSeconds >= 0,
                    "match length must be positive, half time and kickoff spread not negative")
        try require(clockTickSeconds > 0, "the clock tick interval must be positive, got \(clockTickSeconds)")
        try require(statsJitterSeconds >= 0 && statsIntervalSeconds - statsJitterSeconds > 0,
                    "stats need an interval larger than their jitter, got \(statsIntervalSeconds) ± \(statsJitterSeconds)")
        try require([goalsPerMatch, yellowCardsPerMatch, redCardsPerMatch].allSatisfy { $0 >= 0 && $0 <= 50 },
                    "incident means must be between 0 and 50 per match")
        try require(substitutionsPerTeam.lowerBound >= 0 && endDelaySeconds.lowerBound >= 0 && dismissAfterSeconds >= 0,
                    "substitutions, end delay and dismissal must not be negative")
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:")
        try require(channelPrefix.allSatisfy(allowed.contains) && channelPrefix.count + String(matches).count <= 128,
                    "the channel prefix may hold only A-Z a-z 0-9 - _ . : and leave room for the match number")
    }
}
