/// A channel's publishing pace: a token bucket plus adaptive back-off after APNs throttles it.
///
/// The bucket holds up to `burst` tokens and gains one every `interval`; each push takes one.
/// So a quiet channel can publish `burst` changes at once (a goal, then the restart, then a card)
/// and a busy one settles at one push per interval.
///
/// After a `429 TooManyRequests` the channel (and only it) stops until a back-off delay has passed,
/// its bucket is emptied, and its interval is multiplied by the back-off multiplier (capped at the
/// back-off maximum). Every `successesPerRecoveryStep` accepted pushes undo one such step, so the
/// pace recovers gradually instead of running straight back into the limit. Transient failures
/// (5xx, transport) only delay the next attempt; they say nothing about the pace.
///
/// A limiter may also keep a **reserve**: a second, small bucket (`reservedBurst` tokens, one
/// more every `reservedInterval`) that only pushes asking for it (critical changes) draw on, and
/// draw on first. So a goal never waits for a bucket that routine updates emptied, while the
/// channel's total rate stays bounded by the two buckets together. A throttle empties both and
/// stretches both intervals; a back-off delay holds both.
///
/// All state is plain numbers (``State``), persisted as is. Pure: every method takes `now`.
public struct RateLimiter: Sendable, Equatable {
    /// Accepted pushes that undo one throttle step.
    public static let successesPerRecoveryStep = 4
    private static let maximumThrottleLevel = 32

    /// The dynamic part, persisted between runs.
    public struct State: Sendable, Equatable, Codable {
        /// Whole tokens in the bucket as of `refillAnchor`.
        public var tokens: Int
        /// The time from which the next token accrues.
        public var refillAnchor: UnixTime
        /// No push before this time (back-off after a failure).
        public var blockedUntil: UnixTime?
        /// Throttle steps in force: the interval is `minimumInterval * multiplier^throttleLevel`.
        public var throttleLevel: Int
        /// Accepted pushes since the last throttle step was taken or undone.
        public var successesSinceStep: Int
        /// Failures in a row (429, 5xx, transport): the back-off attempt number.
        public var consecutiveFailures: Int
        /// Whole tokens in the reserve as of `reservedRefillAnchor`.
        public var reservedTokens: Int
        /// The time from which the next reserved token accrues.
        public var reservedRefillAnchor: UnixTime

        /// Full buckets (shared and reserve) at `now`, no back-off.
        public init(fullBucketOf burst: Int, reserve: Int = 0, now: UnixTime) {
            self.init(tokens: burst, refillAnchor: now, blockedUntil: nil, throttleLevel: 0, successesSinceStep: 0, consecutiveFailures: 0,
                      reservedTokens: reserve, reservedRefillAnchor: now)
        }

        public init(tokens: Int, refillAnchor: UnixTime, blockedUntil: UnixTime?, throttleLevel: Int,
                    successesSinceStep: Int, consecutiveFailures: Int, reservedTokens: Int = 0, reservedRefillAnchor: UnixTime? = nil) {
            self.tokens = tokens
            self.refillAnchor = refillAnchor
            self.blockedUntil = blockedUntil
            self.throttleLevel = throttleLevel
            self.successesSinceStep = successesSinceStep
            self.consecutiveFailures = consecutiveFailures
            self.reservedTokens = reservedTokens
            self.reservedRefillAnchor = reservedRefillAnchor ?? refillAnchor
        }

        private enum CodingKeys: String, CodingKey {
            case tokens, refillAnchor, blockedUntil, throttleLevel, successesSinceStep, consecutiveFailures, reservedTokens, reservedRefillAnchor
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            tokens = try c.decode(Int.self, forKey: .tokens)
            refillAnchor = UnixTime(nanoseconds: try c.decode(Int64.self, forKey: .refillAnchor))
            blockedUntil = try c.decodeIfPresent(Int64.self, forKey: .blockedUntil).map(UnixTime.init(nanoseconds:))
            throttleLevel = try c.decode(Int.self, forKey: .throttleLevel)
            successesSinceStep = try c.decode(Int.self, forKey: .successesSinceStep)
            consecutiveFailures = try c.decode(Int.self, forKey: .consecutiveFailures)
            // Saved before reserves existed: the reserve starts empty and fills from the anchor.
            reservedTokens = try c.decodeIfPresent(Int.self, forKey: .reservedTokens) ?? 0
            reservedRefillAnchor = try c.decodeIfPresent(Int64.self, forKey: .reservedRefillAnchor).map(UnixTime.init(nanoseconds:))
                ?? refillAnchor
        }

        /// Times are written as integer nanoseconds since the epoch.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(tokens, forKey: .tokens)
            try c.encode(refillAnchor.nanoseconds, forKey: .refillAnchor)
            try c.encodeIfPresent(blockedUntil?.nanoseconds, forKey: .blockedUntil)
            try c.encode(throttleLevel, forKey: .throttleLevel)
            try c.encode(successesSinceStep, forKey: .successesSinceStep)
            try c.encode(consecutiveFailures, forKey: .consecutiveFailures)
            try c.encode(reservedTokens, forKey: .reservedTokens)
            try c.encode(reservedRefillAnchor.nanoseconds, forKey: .reservedRefillAnchor)
        }
    }

    /// Bucket capacity: pushes allowed back to back.
    public let burst: Int
    /// Time to earn one token when not throttled.
    public let minimumInterval: Duration
    /// Delays after failures; its multiplier and maximum also shape the throttled interval.
    public let backoff: Backoff
    /// Reserve capacity: tokens only `reserved` draws may take; 0 for none.
    public let reservedBurst: Int
    /// Time to earn one reserved token when not throttled.
    public let reservedInterval: Duration
    public private(set) var state: State

    /// Which bucket a push drew its token from.
    public enum Draw: Sendable, Equatable {
        case shared
        case reserved
    }

    public init(burst: Int, minimumInterval: Duration, reservedBurst: Int = 0, reservedInterval: Duration = .seconds(1),
                backoff: Backoff, state: State) {
        self.burst = max(1, burst)
        self.minimumInterval = max(minimumInterval, .nanoseconds(1))
        self.reservedBurst = max(0, reservedBurst)
        self.reservedInterval = max(reservedInterval, .nanoseconds(1))
        self.backoff = backoff
        self.state = state
    }

    /// A limiter with full buckets at `now`.
    public init(burst: Int, minimumInterval: Duration, reservedBurst: Int = 0, reservedInterval: Duration = .seconds(1),
                backoff: Backoff, now: UnixTime) {
        self.init(burst: burst, minimumInterval: minimumInterval, reservedBurst: reservedBurst, reservedInterval: reservedInterval,
                  backoff: backoff, state: State(fullBucketOf: burst, reserve: reservedBurst, now: now))
    }

    /// The time to earn one token now: the minimum interval stretched by any throttle steps.
    public var interval: Duration { stretched(minimumInterval) }

    /// The time to earn one reserved token now, stretched like ``interval``.
    public var currentReservedInterval: Duration { stretched(reservedInterval) }

    private func stretched(_ base: Duration) -> Duration {
        let ceiling = max(base, backoff.maximum).inNanoseconds
        var nanoseconds = base.inNanoseconds
        for _ in 0..<state.throttleLevel where nanoseconds < ceiling {
            nanoseconds = Int64(min(Double(nanoseconds) * backoff.multiplier, Double(ceiling)))
        }
        return .nanoseconds(min(nanoseconds, ceiling))
    }

    /// The earliest time a push may go, `now` if one may go at once. With `reserved`, a reserved
    /// token counts too.
    public func nextAllowed(now: UnixTime, reserved: Bool = false) -> UnixTime {
        var current = self
        current.refill(now: now)
        var earliest = current.state.tokens >= 1 ? now : current.state.refillAnchor + current.interval
        if reserved, reservedBurst > 0 {
            let reserve = current.state.reservedTokens >= 1 ? now : current.state.reservedRefillAnchor + current.currentReservedInterval
            earliest = min(earliest, reserve)
        }
        if let blocked = current.state.blockedUntil, blocked > earliest { earliest = blocked }
        return earliest
    }

    /// Takes a token for a push at `now` (with `reserved`, from the reserve first); nil (and no
    /// change) if the limiter holds.
    @discardableResult
    public mutating func consume(now: UnixTime, reserved: Bool = false) -> Draw? {
        guard nextAllowed(now: now, reserved: reserved) <= now else { return nil }
        refill(now: now)
        state.blockedUntil = nil
        if reserved, state.reservedTokens >= 1 {
            state.reservedTokens -= 1
            return .reserved
        }
        state.tokens -= 1
        return .shared
    }

    /// Brings the bucket up to `now`: adds the tokens earned since the anchor. A wall clock that
    /// stepped back restarts the accrual from `now` and pulls the back-off deadline in to at most
    /// `now + backoff.maximum`, so the channel never waits for the clock to catch up. Called by
    /// `consume`; call it before `nextAllowed` when the clock may have stepped back.
    public mutating func refill(now: UnixTime) {
        if let blocked = state.blockedUntil, blocked > now + backoff.maximum { state.blockedUntil = now + backoff.maximum }
        (state.tokens, state.refillAnchor) = Self.refilled(state.tokens, anchor: state.refillAnchor, capacity: burst, step: interval, now: now)
        (state.reservedTokens, state.reservedRefillAnchor) = Self.refilled(state.reservedTokens, anchor: state.reservedRefillAnchor,
                                                                           capacity: reservedBurst, step: currentReservedInterval, now: now)
    }

    /// One bucket brought up to `now`: whole tokens earned since `anchor`, the anchor moved by
    /// what they cost (a full bucket, or a clock that stepped back, anchors at `now`).
    private static func refilled(_ tokens: Int, anchor: UnixTime, capacity: Int, step: Duration,
                                 now: UnixTime) -> (tokens: Int, anchor: UnixTime) {
        guard now >= anchor, tokens < capacity else { return (min(tokens, capacity), now) }
        let gained = (now - anchor).inNanoseconds / step.inNanoseconds
        if Int64(tokens) + gained >= Int64(capacity) { return (capacity, now) }
        return (tokens + Int(gained), anchor + .nanoseconds(gained * step.inNanoseconds))
    }

    /// APNs answered 429 for this channel: wait out a back-off delay, empty both buckets, and
    /// take one throttle step.
    public mutating func recordThrottle<R: RandomNumberGenerator>(now: UnixTime, using random: inout R) {
        block(now: now, using: &random)
        state.tokens = 0
        state.refillAnchor = now
        state.reservedTokens = 0
        state.reservedRefillAnchor = now
        if interval < max(minimumInterval, backoff.maximum) && state.throttleLevel < Self.maximumThrottleLevel {
            state.throttleLevel += 1
        }
        state.successesSinceStep = 0
    }

    /// A transient failure (5xx, transport): wait out a back-off delay before the next attempt.
    public mutating func recordTransientFailure<R: RandomNumberGenerator>(now: UnixTime, using random: inout R) {
        block(now: now, using: &random)
    }

    /// APNs accepted a push: the failure streak ends; enough of these undo a throttle step.
    public mutating func recordSuccess() {
        state.consecutiveFailures = 0
        guard state.throttleLevel > 0 else { return }
        state.successesSinceStep += 1
        if state.successesSinceStep >= Self.successesPerRecoveryStep {
            state.throttleLevel -= 1
            state.successesSinceStep = 0
        }
    }

    private mutating func block<R: RandomNumberGenerator>(now: UnixTime, using random: inout R) {
        state.blockedUntil = now + backoff.delay(attempt: state.consecutiveFailures, using: &random)
        state.consecutiveFailures += 1
    }
}
