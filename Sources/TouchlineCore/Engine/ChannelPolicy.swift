/// How a broadcast channel stores messages for offline devices (fixed when the channel is
/// created). It decides the `apns-expiration` the engine may send.
/// The publishing rules of one channel: pace, priority-10 budget, freshness, back-off, lifetime.
///
/// The defaults suit live football. Apple publishes no broadcast budget; its staff's rough
/// guideline is about one update per second per activity, with throttling (429) per channel.
/// Staying well below that:
/// - `minimumInterval` 2 s, `burst` 3: sustained at most one push every 2 s (half the guideline),
///   while a goal, the restart and a card arriving together still go out at once;
/// - `priorityBudgetPerHour` 10: a football match has a handful of critical moments per hour
///   (goals, red cards, penalties, VAR decisions), so all of them normally alert, and the count
///   stays under the commonly quoted, unconfirmed, ~15 priority-10 updates per hour;
/// - `freshness` 20 min: a 15-minute half-time break without updates does not show as stale, yet
///   a feed that dies mid-match shows within 20 minutes;
/// - `throttleBackoff` 4 s doubling to 2 min, 20 % jitter: the first retry waits two intervals;
/// - `mostRecentLifetime` 15 min: an offline device that wakes later than that gets no old score;
/// - `endGracePeriod` 5 min: the channel outlives the `end` push long enough for it to be
///   delivered, then is deleted to keep the app under the 10,000-channel limit.
///
/// In JSON, durations are seconds (fractions allowed) and every member is optional: missing ones
/// take the default, so a partial policy overrides only what it names.
public struct ChannelPolicy: Sendable, Equatable {
    /// Time to earn one push once the burst is spent.
    public var minimumInterval: Duration
    /// Pushes that may go back to back after a quiet spell.
    public var burst: Int
    /// Priority-10 pushes (with alert) allowed in any rolling hour; 0 sends everything at 5.
    public var priorityBudgetPerHour: Int
    /// `stale-date` = send time + this.
    public var freshness: Duration
    /// `relevance-score` on every push; nil leaves it out.
    public var relevanceScore: Double?
    /// Delays after 429 and 5xx answers; after a 429 the interval is also multiplied.
    public var throttleBackoff: Backoff
    /// `apns-expiration` = send time + this on most-recent channels (no-storage channels send 0).
    public var mostRecentLifetime: Duration
    /// Time between the accepted `end` push and the deletion of the APNs channel.
    public var endGracePeriod: Duration

    public init(minimumInterval: Duration = .seconds(2), burst: Int = 3, priorityBudgetPerHour: Int = 10,
                freshness: Duration = .seconds(20 * 60), relevanceScore: Double? = 100,
                throttleBackoff: Backoff = Backoff(initial: .seconds(4), maximum: .seconds(120), multiplier: 2, jitter: 0.2),
                mostRecentLifetime: Duration = .seconds(15 * 60), endGracePeriod: Duration = .seconds(5 * 60)) {
        self.minimumInterval = minimumInterval
        self.burst = burst
        self.priorityBudgetPerHour = priorityBudgetPerHour
        self.freshness = freshness
        self.relevanceScore = relevanceScore
        self.throttleBackoff = throttleBackoff
        self.mostRecentLifetime = mostRecentLifetime
        self.endGracePeriod = endGracePeriod
    }

    /// Live-football defaults (see the type's documentation).
    public static let `default` = ChannelPolicy()

    /// The `apns-expiration` header value for a push sent at `now`.
    public func expiration(for storage: ChannelStorage, now: UnixTime) -> Int64 {
        switch storage {
        case .noStorage: 0
        case .mostRecent: (now + mostRecentLifetime).seconds
        }
    }
}

/// A policy value out of range, naming the JSON member.
public struct ChannelPolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var problem: String
    public var description: String { "channel policy: \(field) \(problem)" }
}

extension ChannelPolicy: Codable {
    private enum CodingKeys: String, CodingKey {
        case minimumIntervalSeconds, burst, priorityBudgetPerHour, freshnessSeconds, relevanceScore
        case throttleBackoff, mostRecentLifetimeSeconds, endGracePeriodSeconds
    }

    private enum BackoffKeys: String, CodingKey {
        case initialSeconds, maximumSeconds, multiplier, jitter
    }

    /// Longest duration any policy member may have (a day); keeps conversions far from overflow.
    private static let longestDuration = 86_400.0

    /// `userInfo` key of a `ChannelPolicy` whose values fill the members a decoded policy leaves
    /// out (the gateway's configured default policy); without it, ``default`` fills them.
    public static let decodingBaseKey = CodingUserInfoKey(rawValue: "ChannelPolicy.decodingBase")!

    public init(from decoder: any Decoder) throws {
        let defaults = decoder.userInfo[Self.decodingBaseKey] as? ChannelPolicy ?? .default
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func seconds(_ key: CodingKeys, _ fallback: Duration, allowZero: Bool = false) throws -> Duration {
            guard let value = try c.decodeIfPresent(Double.self, forKey: key) else { return fallback }
            try Self.check(value, within: allowZero ? 0 : .leastNonzeroMagnitude, Self.longestDuration, key.stringValue)
            return .nanoseconds(Int64(value * 1e9))
        }
        // Counts are capped: the budget keeps one timestamp per priority-10 push in its window.
        func count(_ key: CodingKeys, _ fallback: Int, minimum: Int) throws -> Int {
            guard let value = try c.decodeIfPresent(Int.self, forKey: key) else { return fallback }
            guard value >= minimum, value <= 1000 else {
                throw ChannelPolicyError(field: key.stringValue, problem: "must be between \(minimum) and 1000, got \(value)")
            }
            return value
        }
        minimumInterval = try seconds(.minimumIntervalSeconds, defaults.minimumInterval)
        burst = try count(.burst, defaults.burst, minimum: 1)
        priorityBudgetPerHour = try count(.priorityBudgetPerHour, defaults.priorityBudgetPerHour, minimum: 0)
        freshness = try seconds(.freshnessSeconds, defaults.freshness)
        if c.contains(.relevanceScore) {
            relevanceScore = try c.decodeIfPresent(Double.self, forKey: .relevanceScore)
            if let score = relevanceScore { try Self.check(score, within: -1e9, 1e9, "relevanceScore") }
        } else {
            relevanceScore = defaults.relevanceScore
        }
        throttleBackoff = try c.contains(.throttleBackoff)
            ? Self.decodeBackoff(try c.nestedContainer(keyedBy: BackoffKeys.self, forKey: .throttleBackoff), defaults.throttleBackoff)
            : defaults.throttleBackoff
        mostRecentLifetime = try seconds(.mostRecentLifetimeSeconds, defaults.mostRecentLifetime)
        guard mostRecentLifetime <= .seconds(8 * 3600) else {
            throw ChannelPolicyError(field: "mostRecentLifetimeSeconds", problem: "must be at most 28800 (APNs stores 8 hours at most)")
        }
        endGracePeriod = try seconds(.endGracePeriodSeconds, defaults.endGracePeriod, allowZero: true)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(minimumInterval.inSeconds, forKey: .minimumIntervalSeconds)
        try c.encode(burst, forKey: .burst)
        try c.encode(priorityBudgetPerHour, forKey: .priorityBudgetPerHour)
        try c.encode(freshness.inSeconds, forKey: .freshnessSeconds)
        try c.encode(relevanceScore, forKey: .relevanceScore)
        var b = c.nestedContainer(keyedBy: BackoffKeys.self, forKey: .throttleBackoff)
        try b.encode(throttleBackoff.initial.inSeconds, forKey: .initialSeconds)
        try b.encode(throttleBackoff.maximum.inSeconds, forKey: .maximumSeconds)
        try b.encode(throttleBackoff.multiplier, forKey: .multiplier)
        try b.encode(throttleBackoff.jitter, forKey: .jitter)
        try c.encode(mostRecentLifetime.inSeconds, forKey: .mostRecentLifetimeSeconds)
        try c.encode(endGracePeriod.inSeconds, forKey: .endGracePeriodSeconds)
    }

    /// Validates before building, because `Backoff` traps on values out of range.
    private static func decodeBackoff(_ c: KeyedDecodingContainer<BackoffKeys>, _ defaults: Backoff) throws -> Backoff {
        let initial = try c.decodeIfPresent(Double.self, forKey: .initialSeconds) ?? defaults.initial.inSeconds
        let maximum = try c.decodeIfPresent(Double.self, forKey: .maximumSeconds) ?? defaults.maximum.inSeconds
        let multiplier = try c.decodeIfPresent(Double.self, forKey: .multiplier) ?? defaults.multiplier
        let jitter = try c.decodeIfPresent(Double.self, forKey: .jitter) ?? defaults.jitter
        try check(initial, within: 0.001, longestDuration, "throttleBackoff.initialSeconds")
        try check(maximum, within: initial, longestDuration, "throttleBackoff.maximumSeconds")
        try check(multiplier, within: 1, 100, "throttleBackoff.multiplier")
        try check(jitter, within: 0, 1, "throttleBackoff.jitter")
        return Backoff(initial: .nanoseconds(Int64(initial * 1e9)), maximum: .nanoseconds(Int64(maximum * 1e9)),
                       multiplier: multiplier, jitter: jitter)
    }

    private static func check(_ value: Double, within low: Double, _ high: Double, _ field: String) throws {
        guard value.isFinite, value >= low, value <= high else {
            throw ChannelPolicyError(field: field, problem: "must be between \(low == .leastNonzeroMagnitude ? "0 (exclusive)" : "\(low)") and \(high), got \(value)")
        }
    }
}
