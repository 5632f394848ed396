import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime

/// The ``KeyLimits`` of the configured keys as they are spent: a bucket of push-to-start
/// fan-outs per key (the core's ``RateLimiter``) and the channel count each key may hold, with
/// the refusals counted for `/metrics`.
///
/// Pure but for the clock's reading by the caller: `now` is a parameter, so the rules run in
/// virtual time in tests. Memory is one bucket per configured key, whatever is sent.
package struct KeyQuotas: Sendable {
    /// Which limit refused a request (the `limit` label of `touchline_key_limit_refusals_total`).
    package enum Limit: String, Sendable {
        case channels
        case starts
        case rolloverInterval = "rollover_interval"
        case followTopic = "follow_topic"
    }

    package let settings: KeyLimits
    /// By key: its start bucket (nil: not limited) and channel cap (nil: none).
    private var starts: [String: RateLimiter?]
    private let channelCaps: [String: Int?]
    /// Refusals by the key's scope (`admin` or its channel prefix, never the key) and limit.
    package private(set) var refusals: [Refusal: Int] = [:]

    package struct Refusal: Hashable, Sendable {
        package var scope: String
        package var limit: Limit
    }

    package init(keys: [GatewayConfiguration.APIKey], settings: KeyLimits, now: UnixTime) {
        self.settings = settings
        var starts: [String: RateLimiter?] = [:]
        var caps: [String: Int?] = [:]
        for key in keys {
            let applied = settings.applied(to: key)
            caps[key.key] = applied.channels
            starts[key.key] = applied.starts.map { limit in
                let interval = limit.interval
                return RateLimiter(burst: limit.burst, minimumInterval: interval,
                                   backoff: Backoff(initial: interval, maximum: interval, multiplier: 1, jitter: 0), now: now)
            }
        }
        self.starts = starts
        channelCaps = caps
    }

    /// Takes one fan-out of push-to-start (a kickoff or an asked-for rollover) from `key`'s
    /// bucket: 429 `start_rate_limited` with `Retry-After` when it is empty.
    package mutating func takeStart(for key: GatewayConfiguration.APIKey, now: UnixTime) throws(HTTPError) {
        guard case var bucket?? = starts[key.key] else { return }
        defer { starts[key.key] = bucket }
        if bucket.consume(now: now) != nil { return }
        let seconds = Self.wholeSeconds(until: bucket.nextAllowed(now: now), from: now)
        count(.starts, for: key)
        throw HTTPError(status: 429, code: "start_rate_limited",
                        message: "this API key has used up its kickoffs and rollovers for now (keyLimits: startBurst, startsPerHour); retry after \(seconds) s",
                        headers: [("Retry-After", String(seconds))])
    }

    /// 409 `key_channel_limit` when `key` holds `held` channels already and may hold no more.
    package mutating func requireChannelRoom(for key: GatewayConfiguration.APIKey, held: () -> Int) throws(HTTPError) {
        guard case let cap?? = channelCaps[key.key] else { return }
        let held = held()
        guard held >= cap else { return }
        count(.channels, for: key)
        throw HTTPError(status: 409, code: "key_channel_limit",
                        message: "this API key holds \(held) channels, its limit (\(cap)); delete ended channels before creating more")
    }

    /// Counts a refusal of `limit` made elsewhere (a rollover too soon, a follow topic not allowed).
    package mutating func count(_ limit: Limit, for key: GatewayConfiguration.APIKey) {
        let scope = switch key.scope {
        case .admin: "admin"
        case .channelPrefix(let prefix): prefix
        }
        refusals[Refusal(scope: scope, limit: limit), default: 0] += 1
    }

    /// Whole seconds (at least 1) from `now` to `time`, for `Retry-After`.
    package static func wholeSeconds(until time: UnixTime, from now: UnixTime) -> Int64 {
        max(1, ((time - now).inNanoseconds + 999_999_999) / 1_000_000_000)
    }
}
