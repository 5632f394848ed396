import TouchlineCore

/// How long the gateway keeps the `Idempotency-Key`s of requests that created personal jobs
/// (`POST /v1/personal`, `POST /v1/channels/{id}/start`, `POST /v1/deadletters/replay`).
///
/// Set as one JSON object (`idempotency` in the file, `TOUCHLINE_IDEMPOTENCY` or
/// `--idempotency`); members left out keep their defaults. docs/configuration.md explains it.
public struct IdempotencySettings: Sendable, Equatable {
    /// A key is answered with its first request's answer for this long; after that it may be
    /// used again for a new request. The default, a day, outlasts any client's retries.
    public var keyLifetime: Duration
    /// A test hook, never set in production: the process ends (`_exit`) right after a request's
    /// idempotency record has committed and before it is answered, the moment a lost 202 comes
    /// from. `touchline serve` takes it from `TOUCHLINE_IDEMPOTENCY_EXIT_AFTER_COMMIT=1`.
    public var exitAfterCommit = false

    /// Longest lifetime accepted: 30 days.
    static let maximumLifetimeSeconds = 2_592_000
    /// Expired records deleted by one request that stores a key, at most: the table stays
    /// bounded by the keys of one lifetime and no request pays for a large backlog.
    package static let prunedPerRequest = 16

    public init(keyLifetime: Duration = .seconds(86_400)) {
        self.keyLifetime = keyLifetime
    }

    /// Settings from JSON: `{"keyLifetimeSeconds": 1...2592000}`.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        let members = try ConfigurationMembers.members(of: value, allowed: ["keyLifetimeSeconds"], path: nil)
        if let seconds = try ConfigurationMembers.integer(members, "keyLifetimeSeconds", 1...Self.maximumLifetimeSeconds) {
            keyLifetime = .seconds(seconds)
        }
    }
}
