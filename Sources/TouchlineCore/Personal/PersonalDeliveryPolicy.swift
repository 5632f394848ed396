/// How personal (per-token) pushes react to each APNs outcome.
///
/// Codable so that it can live in the gateway's configuration file; durations are in
/// milliseconds there. Defaults:
///
/// | Setting | Default | Why |
/// |---|---|---|
/// | `maxAttempts` | 5 | Five answers from APNs for one push over about a minute ride out a server blip without looping forever. |
/// | `maxHandBacks` | 20 | Requests APNs provably did not process (GOAWAY, REFUSED_STREAM, no connection) are not answers; about ten minutes of them (with the retry back-off) before giving up. |
/// | `retryInitialMilliseconds` / `retryMaximumMilliseconds` | 500 / 60,000 | Back-off for 500s and broken connections. |
/// | `throttleInitialMilliseconds` / `throttleMaximumMilliseconds` | 5,000 / 300,000 | A 429 is about one device's budget: wait much longer for that token only. |
/// | `multiplier` | 2 | Doubling per attempt. |
/// | `jitter` | 0.5 | Delays are spread over [50 %, 100 %] of the step so retries do not arrive in lock-step. |
public struct PersonalDeliveryPolicy: Sendable, Codable, Equatable {
    /// Sends of one target that APNs may have processed, the first included, before it is
    /// dead-lettered as `RetriesExhausted`. Hand-backs (``PersonalOutcome/notProcessed``) do not count.
    public var maxAttempts: Int
    /// Sends of one target that APNs provably did not process before it is dead-lettered as
    /// `NotProcessed`: a bound of its own, larger than `maxAttempts`, so that a transport failing
    /// for good still ends the target. Counted in memory only: a restart starts it again.
    public var maxHandBacks: Int
    public var retryInitialMilliseconds: Int64
    public var retryMaximumMilliseconds: Int64
    public var throttleInitialMilliseconds: Int64
    public var throttleMaximumMilliseconds: Int64
    public var multiplier: Double
    public var jitter: Double

    /// The dead-letter reason of a target whose retries ran out.
    public static let retriesExhaustedReason = "RetriesExhausted"
    /// The failure reason counted for a target whose token APNs declared dead (410).
    public static let tokenDeadReason = "Unregistered"
    /// The dead-letter reason of a target that APNs never processed in `maxHandBacks` sends.
    public static let notProcessedReason = "NotProcessed"
    /// The dead-letter reason of a send that must not be repeated and got no answer
    /// (``PersonalOutcome/unconfirmed``): APNs may have delivered it.
    public static let unconfirmedReason = "Unconfirmed"

    public init(maxAttempts: Int = 5, maxHandBacks: Int = 20, retryInitialMilliseconds: Int64 = 500,
                retryMaximumMilliseconds: Int64 = 60_000, throttleInitialMilliseconds: Int64 = 5_000,
                throttleMaximumMilliseconds: Int64 = 300_000, multiplier: Double = 2, jitter: Double = 0.5) {
        self.maxAttempts = maxAttempts
        self.maxHandBacks = maxHandBacks
        self.retryInitialMilliseconds = retryInitialMilliseconds
        self.retryMaximumMilliseconds = retryMaximumMilliseconds
        self.throttleInitialMilliseconds = throttleInitialMilliseconds
        self.throttleMaximumMilliseconds = throttleMaximumMilliseconds
        self.multiplier = multiplier
        self.jitter = jitter
    }

    /// Back-off for transient failures (500, broken connections, transport).
    public var retryBackoff: Backoff {
        Backoff(initial: .milliseconds(retryInitialMilliseconds), maximum: .milliseconds(retryMaximumMilliseconds),
                multiplier: multiplier, jitter: jitter)
    }

    /// Back-off for one throttled token (429).
    public var throttleBackoff: Backoff {
        Backoff(initial: .milliseconds(throttleInitialMilliseconds), maximum: .milliseconds(throttleMaximumMilliseconds),
                multiplier: multiplier, jitter: jitter)
    }

    /// The decision after a send of a target ended with `outcome`: `attempt` sends APNs may have
    /// processed (1-based, this one included), and `handBacks` sends it provably did not
    /// (this one included when `outcome` is ``PersonalOutcome/notProcessed``).
    public func decide<R: RandomNumberGenerator>(_ outcome: PersonalOutcome, attempt: Int, handBacks: Int = 0,
                                                 using random: inout R) -> PersonalDecision {
        let backoff: Backoff
        switch outcome {
        case .accepted: return .sent
        case .tokenDead(let timestamp): return .deactivate(timestampMilliseconds: timestamp)
        case .permanent(let reason), .configuration(let reason): return .deadLetter(reason: reason)
        case .unconfirmed: return .deadLetter(reason: Self.unconfirmedReason)
        case .throttledToken: backoff = throttleBackoff
        case .retryLater, .retryOnNewConnection: backoff = retryBackoff
        case .notProcessed:
            guard handBacks < maxHandBacks else { return .deadLetter(reason: Self.notProcessedReason) }
            return .retry(after: retryBackoff.delay(attempt: max(0, handBacks - 1), using: &random))
        }
        guard attempt < maxAttempts else { return .deadLetter(reason: Self.retriesExhaustedReason) }
        return .retry(after: backoff.delay(attempt: attempt - 1, using: &random))
    }

    /// Reads a policy saved before `maxHandBacks` existed too (it then takes the default).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = PersonalDeliveryPolicy()
        self.init(maxAttempts: try c.decode(Int.self, forKey: .maxAttempts),
                  maxHandBacks: try c.decodeIfPresent(Int.self, forKey: .maxHandBacks) ?? defaults.maxHandBacks,
                  retryInitialMilliseconds: try c.decode(Int64.self, forKey: .retryInitialMilliseconds),
                  retryMaximumMilliseconds: try c.decode(Int64.self, forKey: .retryMaximumMilliseconds),
                  throttleInitialMilliseconds: try c.decode(Int64.self, forKey: .throttleInitialMilliseconds),
                  throttleMaximumMilliseconds: try c.decode(Int64.self, forKey: .throttleMaximumMilliseconds),
                  multiplier: try c.decode(Double.self, forKey: .multiplier), jitter: try c.decode(Double.self, forKey: .jitter))
    }

    /// Whether a 410 should deactivate a token registered at `registeredAt`.
    ///
    /// APNs' `timestamp` says when it found the token invalid; a registration after that moment
    /// means the app handed the token over again (it is alive), so it is kept. Without a
    /// timestamp the 410 alone is proof enough.
    public static func shouldDeactivate(registeredAt: UnixTime, apnsTimestampMilliseconds: Int64?) -> Bool {
        guard let apnsTimestampMilliseconds else { return true }
        let (nanoseconds, overflow) = apnsTimestampMilliseconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return apnsTimestampMilliseconds > 0 }
        return registeredAt <= UnixTime(nanoseconds: nanoseconds)
    }
}
