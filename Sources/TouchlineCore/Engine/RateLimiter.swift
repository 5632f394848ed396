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

        /// A full bucket at `now`, no back-off.
        public init(fullBucketOf burst: Int, now: UnixTime) {
            self.init(tokens: burst, refillAnchor: now, blockedUntil: nil, throttleLevel: 0, successesSinceStep: 0, consecutiveFailures: 0)
        }

        public init(tokens: Int, refillAnchor: UnixTime, blockedUntil: UnixTime?, throttleLevel: Int,
                    successesSinceStep: Int, consecutiveFailures: Int) {
            self.tokens = tokens
            self.refillAnchor = refillAnchor
            self.blockedUntil = blockedUntil
            self.throttleLevel = throttleLevel
            self.successesSinceStep = successesSinceStep
            self.consecutiveFailures = consecutiveFailures
        }

        private enum CodingKeys: String, CodingKey {
            case tokens, refillAnchor, blockedUntil, throttleLevel, successesSinceStep, consecutiveFailures
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            tokens = try c.decode(Int.self, forKey: .tokens)
            refillAnchor = UnixTime(nanoseconds: try c.decode(Int64.self, forKey: .refillAnchor))
            blockedUntil = try c.decodeIfPresent(Int64.self, forKey: .blockedUntil).map(UnixTime.init(nanoseconds:))
            throttleLevel = try c.decode(Int.self, forKey: .throttleLevel)
            successesSinceStep = try c.decode(Int.self, forKey: .successesSinceStep)
            consecutiveFailures = try c.decode(Int.self, forKey: .consecutiveFailures)
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
        }
    }

    /// Bucket capacity: pushes allowed back to back.
    public let burst: Int
    /// Time to earn one token when not throttled.
    public let minimumInterval: Duration
    /// Delays after failures; its multiplier and maximum also shape the throttled interval.
    public let backoff: Backoff
    public private(set) var state: State

    public init(burst: Int, minimumInterval: Duration, backoff: Backoff, state: State) {
        self.burst = max(1, burst)
        self.minimumInterval = max(minimumInterval, .nanoseconds(1))
        self.backoff = backoff
        self.state = state
    }

    /// A limiter with a full bucket at `now`.
    public init(burst: Int, minimumInterval: Duration, backoff: Backoff, now: UnixTime) {
        self.init(burst: burst, minimumInterval: minimumInterval, backoff: backoff, state: State(fullBucketOf: burst, now: now))
    }

    /// The time to earn one token now: the minimum interval stretched by any throttle steps.
    public var interval: Duration {
        let ceiling = max(minimumInterval, backoff.maximum).inNanoseconds
        var nanoseconds = minimumInterval.inNanoseconds
        for _ in 0..<state.throttleLevel where nanoseconds < ceiling {
            nanoseconds = Int64(min(Double(nanoseconds) * backoff.multiplier, Double(ceiling)))
        }
        return .nanoseconds(min(nanoseconds, ceiling))
    }

    /// The earliest time a push may go, `now` if one may go at once.
    public func nextAllowed(now: UnixTime) -> UnixTime {
        var current = self
        current.refill(now: now)
        var earliest = current.state.tokens >= 1 ? now : current.state.refillAnchor + current.interval
        if let blocked = current.state.blockedUntil, blocked > earliest { earliest = blocked }
        return earliest
    }

    /// Takes a token for a push at `now`; false (and no change) if the limiter holds.
    @discardableResult
    public mutating func consume(now: UnixTime) -> Bool {
        guard nextAllowed(now: now) <= now else { return false }
        refill(now: now)
        state.tokens -= 1
        state.blockedUntil = nil
        return true
    }

    /// Brings the bucket up to `now`: adds the tokens earned since the anchor. A wall clock that
    /// stepped back restarts the accrual from `now` and pulls the back-off deadline in to at most
    /// `now + backoff.maximum`, so the channel never waits for the clock to catch up. Called by
    /// `consume`; call it before `nextAllowed` when the clock may have stepped back.
    public mutating func refill(now: UnixTime) {
        if let blocked = state.blockedUntil, blocked > now + backoff.maximum { state.blockedUntil = now + backoff.maximum }
        guard now >= state.refillAnchor else {
            state.tokens = min(state.tokens, burst)
            state.refillAnchor = now
            return
        }
        guard state.tokens < burst else {
            state.tokens = burst
            state.refillAnchor = now
            return
        }
        let step = interval.inNanoseconds
        let gained = (now - state.refillAnchor).inNanoseconds / step
        if Int64(state.tokens) + gained >= Int64(burst) {
            state.tokens = burst
            state.refillAnchor = now
        } else {
            state.tokens += Int(gained)
            state.refillAnchor = state.refillAnchor + .nanoseconds(gained * step)
        }
    }

    /// APNs answered 429 for this channel: wait out a back-off delay, empty the bucket, and take
    /// one throttle step.
    public mutating func recordThrottle<R: RandomNumberGenerator>(now: UnixTime, using random: inout R) {
        block(now: now, using: &random)
        state.tokens = 0
        state.refillAnchor = now
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
