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
///   delivered, then is deleted to keep the app under the 10,000-channel limit;
/// - `criticalBurst` 2, `criticalInterval` 10 s: a reserve only critical changes draw on, so a
///   goal goes at once even when routine updates emptied the bucket (a goal and its VAR
///   decision both go at once); with the shared bucket the sustained ceiling is 0.6 pushes/s,
///   still under the guideline;
/// - `lowImportanceInterval` 30 s: clock corrections and statistics go at most every 30 s unless
///   a more important push carries them (every push carries the whole state). The device runs the
///   match clock itself, and a statistic 30 s old is not wrong; every such push saved is battery
///   and budget. Shorter than `freshness`, so low updates alone keep an activity fresh;
/// - `feedStall` 3 min: a live football match sends at least a clock event a minute, so three
///   silent minutes mean the feed died (operators hear of it long before `stale-date` shows it
///   on the phones);
/// - `maximumActivityAge` off: a football match fits in a Live Activity's 8 hours; cricket, golf
///   or a rain-delayed final sets it (at most 7 h 50 min) to roll over to a new APNs channel
///   before Apple ends the activities (``ActivityRollover``).
///
/// In JSON (``json``, ``init(json:base:)``), durations are seconds (fractions down to a
/// millisecond) and every member is optional: missing ones take the default, so a partial
/// policy overrides only what it names.
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
    /// Tokens reserved for critical changes, drawn on before the shared bucket; 0 for none
    /// (critical changes then wait for the pace like any other).
    public var criticalBurst: Int
    /// Time to earn one reserved token back.
    public var criticalInterval: Duration
    /// A change of low importance waits until this long after the last accepted push, unless a
    /// more important one carries it sooner; zero paces low changes like normal ones.
    public var lowImportanceInterval: Duration
    /// Silence after which a live match's feed is reported stalled; zero turns the watch off.
    public var feedStall: Duration
    /// Age of the activities on the channel's APNs channel at which the match rolls over to a
    /// new one; zero never rolls over.
    public var maximumActivityAge: Duration

    public init(minimumInterval: Duration = .seconds(2), burst: Int = 3, priorityBudgetPerHour: Int = 10,
                freshness: Duration = .seconds(20 * 60), relevanceScore: Double? = 100,
                throttleBackoff: Backoff = Backoff(initial: .seconds(4), maximum: .seconds(120), multiplier: 2, jitter: 0.2),
                mostRecentLifetime: Duration = .seconds(15 * 60), endGracePeriod: Duration = .seconds(5 * 60),
                criticalBurst: Int = 2, criticalInterval: Duration = .seconds(10), lowImportanceInterval: Duration = .seconds(30),
                feedStall: Duration = .seconds(180), maximumActivityAge: Duration = .zero) {
        self.minimumInterval = minimumInterval
        self.burst = burst
        self.priorityBudgetPerHour = priorityBudgetPerHour
        self.freshness = freshness
        self.relevanceScore = relevanceScore
        self.throttleBackoff = throttleBackoff
        self.mostRecentLifetime = mostRecentLifetime
        self.endGracePeriod = endGracePeriod
        self.criticalBurst = criticalBurst
        self.criticalInterval = criticalInterval
        self.lowImportanceInterval = lowImportanceInterval
        self.feedStall = feedStall
        self.maximumActivityAge = maximumActivityAge
    }

    /// Live-football defaults (see the type's documentation).
    public static let `default` = ChannelPolicy()

    /// The pacing before importance-aware pacing: no reserve for critical changes, low changes
    /// paced like normal ones. The load scenarios' baseline.
    public static let uniformPacing = ChannelPolicy(criticalBurst: 0, lowImportanceInterval: .zero)
    /// The `apns-expiration` header value for a push sent at `now`.
    public func expiration(for storage: ChannelStorage, now: UnixTime) -> Int64 {
        switch storage {
        case .noStorage: 0
        case .mostRecent: (now + mostRecentLifetime).seconds
        }
    }
}

/// A policy value out of range or of the wrong type, naming the JSON member.
public struct ChannelPolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The member's path, e.g. `throttleBackoff.jitter`.
    public var field: String
    public var problem: String
    /// For an unknown member: the names allowed where it stood (for a "did you mean" hint).
    public var allowedNames: [String] = []
    public var description: String { "channel policy: \(field) \(problem)" }
}

extension ChannelPolicy {
    /// Shortest positive duration a policy member may have. Anything shorter means nothing at
    /// APNs' one-second resolution, and a fraction of a nanosecond would be stored as zero.
    public static let shortestDuration = Duration.milliseconds(1)
    /// Longest duration any policy member may have (a day); keeps conversions far from overflow.
    public static let longestDuration = Duration.seconds(86_400)
    /// The latest a rollover may start: 10 minutes before Apple ends an activity (8 hours), so
    /// the new channel is created and the audience started while the old activities still show.
    public static let longestActivityAge = Duration.seconds(8 * 3600 - 600)
    /// The earliest: rolling over more often than every 10 minutes would start the audience again
    /// and again for nothing.
    public static let shortestActivityAge = Duration.seconds(600)
    /// Counts are capped: the budget keeps one timestamp per priority-10 push in its window.
    public static let largestCount = 1000

    /// The policy as JSON: durations in seconds (`minimumIntervalSeconds`...), the back-off as
    /// an object. What the store keeps and the API shows; ``init(json:base:)`` reads it back to
    /// the same value.
    public var json: JSONValue {
        [
            "minimumIntervalSeconds": .number(minimumInterval.inSeconds),
            "burst": .integer(Int64(burst)),
            "priorityBudgetPerHour": .integer(Int64(priorityBudgetPerHour)),
            "freshnessSeconds": .number(freshness.inSeconds),
            "relevanceScore": relevanceScore.map(JSONValue.number) ?? .null,
            "throttleBackoff": [
                "initialSeconds": .number(throttleBackoff.initial.inSeconds),
                "maximumSeconds": .number(throttleBackoff.maximum.inSeconds),
                "multiplier": .number(throttleBackoff.multiplier),
                "jitter": .number(throttleBackoff.jitter),
            ],
            "mostRecentLifetimeSeconds": .number(mostRecentLifetime.inSeconds),
            "endGracePeriodSeconds": .number(endGracePeriod.inSeconds),
            "criticalBurst": .integer(Int64(criticalBurst)),
            "criticalIntervalSeconds": .number(criticalInterval.inSeconds),
            "lowImportanceIntervalSeconds": .number(lowImportanceInterval.inSeconds),
            "feedStallSeconds": .number(feedStall.inSeconds),
            "maximumActivityAgeSeconds": .number(maximumActivityAge.inSeconds),
        ]
    }

    /// Reads a policy from JSON (a channel's own in the provider API, the configuration's
    /// default, or a stored record); members left out take their value from `base`, so a partial
    /// policy overrides only what it names, and unknown members are refused.
    ///
    /// Every value is checked after its conversion to what is kept: a duration is rounded to
    /// nanoseconds and must then lie in ``shortestDuration``...``longestDuration`` (the end
    /// grace period may be 0), so no accepted policy is stored as a zero that the next start
    /// could not read back.
    public init(json: JSONValue, base: ChannelPolicy = .default) throws(ChannelPolicyError) {
        let reader = try PolicyMembers(json, path: "", allowed: ["minimumIntervalSeconds", "burst", "priorityBudgetPerHour",
                                                                   "freshnessSeconds", "relevanceScore", "throttleBackoff",
                                                                   "mostRecentLifetimeSeconds", "endGracePeriodSeconds",
                                                                   "criticalBurst", "criticalIntervalSeconds", "lowImportanceIntervalSeconds",
                                                                   "feedStallSeconds", "maximumActivityAgeSeconds"])
        self = base
        minimumInterval = try reader.duration("minimumIntervalSeconds") ?? base.minimumInterval
        burst = try reader.count("burst", minimum: 1) ?? base.burst
        priorityBudgetPerHour = try reader.count("priorityBudgetPerHour", minimum: 0) ?? base.priorityBudgetPerHour
        freshness = try reader.duration("freshnessSeconds") ?? base.freshness
        if let score = reader.member("relevanceScore") {
            relevanceScore = score == .null ? nil : try reader.number("relevanceScore", score, within: -1e9...1e9)
        }
        if let backoff = reader.member("throttleBackoff"), backoff != .null {
            throttleBackoff = try Self.backoff(backoff, base: base.throttleBackoff)
        }
        mostRecentLifetime = try reader.duration("mostRecentLifetimeSeconds", maximum: .seconds(8 * 3600),
                                                 why: " (APNs stores 8 hours at most)") ?? base.mostRecentLifetime
        endGracePeriod = try reader.duration("endGracePeriodSeconds", allowZero: true) ?? base.endGracePeriod
        criticalBurst = try reader.count("criticalBurst", minimum: 0) ?? base.criticalBurst
        criticalInterval = try reader.duration("criticalIntervalSeconds") ?? base.criticalInterval
        lowImportanceInterval = try reader.duration("lowImportanceIntervalSeconds", allowZero: true) ?? base.lowImportanceInterval
        feedStall = try reader.duration("feedStallSeconds", allowZero: true) ?? base.feedStall
        maximumActivityAge = try reader.duration("maximumActivityAgeSeconds", allowZero: true, maximum: Self.longestActivityAge,
                                                 why: " (Apple ends a Live Activity 8 hours after it starts; the rollover needs the last 10 minutes)")
            ?? base.maximumActivityAge
        guard maximumActivityAge == .zero || maximumActivityAge >= Self.shortestActivityAge else {
            throw ChannelPolicyError(field: "maximumActivityAgeSeconds",
                                     problem: "must be 0 (never roll over) or at least \(Self.shortestActivityAge.inSeconds.formatted) seconds, "
                                         + "got \(maximumActivityAge.inSeconds.formatted)")
        }
        guard lowImportanceInterval < freshness else {
            // Low updates alone must renew `stale-date` before it passes.
            throw ChannelPolicyError(field: "lowImportanceIntervalSeconds",
                                     problem: "must be shorter than freshnessSeconds (\(freshness.inSeconds.formatted)) so that low updates "
                                         + "alone keep the activity fresh, got \(lowImportanceInterval.inSeconds.formatted)")
        }
    }

    /// Validates before building, because `Backoff` traps on values out of range.
    private static func backoff(_ json: JSONValue, base: Backoff) throws(ChannelPolicyError) -> Backoff {
        let reader = try PolicyMembers(json, path: "throttleBackoff.", allowed: ["initialSeconds", "maximumSeconds", "multiplier", "jitter"])
        let initial = try reader.duration("initialSeconds") ?? base.initial
        let maximum = try reader.duration("maximumSeconds") ?? base.maximum
        guard maximum >= initial else {
            throw ChannelPolicyError(field: "throttleBackoff.maximumSeconds",
                                     problem: "must be at least initialSeconds (\(initial.inSeconds)), got \(maximum.inSeconds)")
        }
        let multiplier = try reader.member("multiplier").map { (value) throws(ChannelPolicyError) in
            try reader.number("multiplier", value, within: 1...100)
        } ?? base.multiplier
        let jitter = try reader.member("jitter").map { (value) throws(ChannelPolicyError) in
            try reader.number("jitter", value, within: 0...1)
        } ?? base.jitter
        return Backoff(initial: initial, maximum: maximum, multiplier: multiplier, jitter: jitter)
    }
}

/// The members of one policy object, read with checks that name the member by its path.
private struct PolicyMembers {
    private let members: [JSONValue.Member]
    private let path: String

    init(_ value: JSONValue, path: String, allowed: Set<JSONMemberName>) throws(ChannelPolicyError) {
        guard case .object(let members) = value else {
            throw ChannelPolicyError(field: path.isEmpty ? "policy" : String(path.dropLast()), problem: "must be a JSON object")
        }
        if let unknown = members.first(where: { !allowed.contains(name: $0.name) }) {
            let names = allowed.map(\.text).sorted()
            throw ChannelPolicyError(field: path + unknown.name, problem: "is not a policy member; allowed: \(names.joined(separator: ", "))",
                                     allowedNames: names)
        }
        self.members = members
        self.path = path
    }

    /// The member's value; `nil` when absent.
    func member(_ name: String) -> JSONValue? {
        members.first { $0.isNamed(name) }?.value
    }

    /// A duration given in seconds, rounded to nanoseconds and checked in that unit; `null`
    /// and absence both leave the base value.
    func duration(_ name: String, allowZero: Bool = false, maximum: Duration = ChannelPolicy.longestDuration,
                  why: String = "") throws(ChannelPolicyError) -> Duration? {
        guard let value = member(name), value != .null else { return nil }
        let seconds = try number(name, value)
        let low = allowZero ? Duration.zero : ChannelPolicy.shortestDuration
        let nanoseconds = (seconds * 1e9).rounded()
        let range = "from \(allowZero ? "0" : "0.001") to \(maximum.inSeconds.formatted) seconds\(why)"
        guard nanoseconds >= Double(low.inNanoseconds), nanoseconds <= Double(maximum.inNanoseconds) else {
            throw ChannelPolicyError(field: path + name, problem: "must be \(range), got \(seconds)")
        }
        return .nanoseconds(Int64(nanoseconds))
    }

    /// A whole number from `minimum` to ``ChannelPolicy/largestCount``.
    func count(_ name: String, minimum: Int) throws(ChannelPolicyError) -> Int? {
        guard let value = member(name), value != .null else { return nil }
        let range = "a whole number from \(minimum) to \(ChannelPolicy.largestCount)"
        guard case .integer(let number) = value else {
            throw ChannelPolicyError(field: path + name, problem: "must be \(range), got \(Self.describe(value))")
        }
        guard number >= minimum, number <= ChannelPolicy.largestCount else {
            throw ChannelPolicyError(field: path + name, problem: "must be \(range), got \(number)")
        }
        return Int(number)
    }

    /// A finite number in `range`.
    func number(_ name: String, _ value: JSONValue, within range: ClosedRange<Double>) throws(ChannelPolicyError) -> Double {
        let number = try number(name, value)
        guard range.contains(number) else {
            throw ChannelPolicyError(field: path + name, problem: "must be from \(range.lowerBound.formatted) to \(range.upperBound.formatted), got \(number)")
        }
        return number
    }

    /// A JSON number (the parser never yields a non-finite one).
    func number(_ name: String, _ value: JSONValue) throws(ChannelPolicyError) -> Double {
        switch value {
        case .integer(let integer): return Double(integer)
        case .number(let double) where double.isFinite: return double
        default: throw ChannelPolicyError(field: path + name, problem: "must be a number, got \(Self.describe(value))")
        }
    }

    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .integer(let number): "\(number)"
        case .number(let number): "\(number)"
        case .string: "a string"
        case .array: "an array"
        case .object, .raw: "an object"
        }
    }
}

extension Double {
    /// `2`, not `2.0`; `0.5` as is.
    fileprivate var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self) }
}
