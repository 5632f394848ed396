import TouchlineConfiguration
import TouchlineCore

/// The request buckets of the configured API keys: a key with a rate limit gets a token bucket
/// (the core's ``RateLimiter``, never throttled), a key without one is never refused.
///
/// Pure: `now` is a parameter, so the rule runs in virtual time in tests. Memory is one bucket
/// per configured key, whatever is sent.
struct KeyRateLimits: Sendable {
    /// Parallel to the configured keys; nil for keys without a limit.
    private var buckets: [RateLimiter?]

    /// Buckets for `keys`, full at `now`: a key's own `rateLimit`, else `providerDefault` for
    /// provider keys; admin keys without a limit of their own are exempt.
    init(keys: [GatewayConfiguration.APIKey], providerDefault: KeyRateLimit?, now: UnixTime) {
        buckets = keys.map { key in
            guard let limit = key.rateLimit ?? (key.scope == .admin ? nil : providerDefault) else { return nil }
            let interval = limit.interval
            return RateLimiter(burst: limit.burst, minimumInterval: interval,
                               backoff: Backoff(initial: interval, maximum: interval, multiplier: 1, jitter: 0), now: now)
        }
    }

    /// Takes one request from the bucket of key `index` at `now`: nil when it is admitted, else
    /// the whole seconds (at least 1) until the bucket holds a request again, for `Retry-After`.
    mutating func admit(keyIndex index: Int, now: UnixTime) -> Int64? {
        guard buckets.indices.contains(index), var bucket = buckets[index] else { return nil }
        defer { buckets[index] = bucket }
        if bucket.consume(now: now) != nil { return nil }
        let wait = bucket.nextAllowed(now: now) - now
        let seconds = (wait.inNanoseconds + 999_999_999) / 1_000_000_000
        return max(1, seconds)
    }
}
