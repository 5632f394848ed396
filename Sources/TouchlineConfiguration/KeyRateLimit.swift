import TouchlineCore

/// A request rate limit of one API key: a token bucket of `burst` requests refilled at
/// `requestsPerSecond`.
///
/// Given per key (`apiKeys[].rateLimit` in the file) or as the default of provider keys without
/// one (`providerRateLimit`, `TOUCHLINE_PROVIDER_RATE_LIMIT`, `--provider-rate-limit`); admin keys
/// are limited only by a `rateLimit` of their own. docs/configuration.md explains it.
public struct KeyRateLimit: Sendable, Equatable {
    /// The sustained rate: one request's worth of the bucket comes back every `1 / requestsPerSecond` seconds.
    public var requestsPerSecond: Double
    /// Requests allowed back to back from a full bucket.
    public var burst: Int

    static let rateRange = 0.001...100_000.0
    static let burstRange = 1...100_000

    public init(requestsPerSecond: Double, burst: Int) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
    }

    /// The time to earn back one request.
    package var interval: Duration { .nanoseconds(Int64((1e9 / requestsPerSecond).rounded(.up))) }

    /// `{"requestsPerSecond": 0.001...100000, "burst": 1...100000}`, both required.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        let members = try ConfigurationMembers.members(of: value, allowed: ["requestsPerSecond", "burst"], path: nil)
        let rate: Double? = switch members["requestsPerSecond"] {
        case nil: nil
        case .integer(let number)? where Self.rateRange.contains(Double(number)): Double(number)
        case .number(let number)? where Self.rateRange.contains(number): number
        default: throw InvalidConfigurationValue("member requestsPerSecond must be a number from 0.001 to 100000")
        }
        let burst = try ConfigurationMembers.integer(members, "burst", Self.burstRange)
        guard let rate, let burst else {
            throw InvalidConfigurationValue("needs both requestsPerSecond and burst, as in {\"requestsPerSecond\": 10, \"burst\": 20}")
        }
        self.init(requestsPerSecond: rate, burst: burst)
    }
}
