import Synchronization
import TouchlineCore

/// The one provider token of the process, shared by every connection and every loop.
///
/// APNs rules (reference §4.2): a token older than 60 minutes is rejected with
/// `403 ExpiredProviderToken`, and changing tokens more often than every 20 minutes earns
/// `429 TooManyProviderTokenUpdates`. So the token is signed once, reused by everyone, and
/// replaced when it reaches ``refreshInterval`` (50 minutes by default).
///
/// ``current()`` is on every request's path: it reads the clock, takes a lock, compares, and
/// returns the cached `bearer <jwt>` string, which shares its storage with the cache.
/// Thread-safe: the state lives in a `Mutex`.
public final class ProviderToken: Sendable {
    /// The default age at which a token is replaced: well inside the 60-minute limit.
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)
    /// Refresh intervals APNs tolerates: no renewal within 20 minutes, none older than 60.
    public static let allowedRefreshIntervals: ClosedRange<Duration> = .seconds(20 * 60) ... .seconds(60 * 60)
    /// APNs rejects a token older than this.
    public static let maximumAge: Duration = .seconds(60 * 60)
    /// Minimum time between two tokens, also when APNs claims ours has expired.
    public static let minimumRenewalSpacing: Duration = .seconds(20 * 60)

    /// The outcome of ``invalidate(observedToken:)``.
    public enum Invalidation: Sendable, Equatable {
        /// The rejected token had already been replaced: retry with ``current()``.
        case alreadyReplaced
        /// A new token was signed: retry with ``current()``. `clockSkewSuspected` is true when the
        /// rejected token was younger than 60 minutes by our clock, so APNs's clock and ours
        /// disagree; operators should check NTP.
        case renewed(clockSkewSuspected: Bool)
        /// The token is younger than 20 minutes by our clock, so renewing would break APNs's
        /// renewal limit and would not help: our clock is probably behind. Do not retry; a new
        /// token will be allowed at `notBefore`.
        case refused(notBefore: UnixTime)
    }

    /// Counters for metrics and logs.
    public struct Statistics: Sendable, Equatable {
        /// Tokens signed, including the first one.
        public var tokensSigned = 0
        /// `ExpiredProviderToken` rejections of a token that was younger than 60 minutes by our clock.
        public var clockSkewSuspicions = 0
        /// Rejections answered with ``Invalidation/refused(notBefore:)``.
        public var renewalsRefused = 0
    }

    private struct State {
        var bearer: String
        var issuedAt: UnixTime
        var statistics: Statistics
    }

    private let signer: ProviderTokenSigner
    private let clock: any WallClock
    /// How old a token may get before ``current()`` replaces it.
    public let refreshInterval: Duration
    private let state: Mutex<State>

    /// Signs the first token right away, so key problems surface at start-up.
    public init(signer: ProviderTokenSigner, clock: any WallClock = SystemClock(),
                refreshInterval: Duration = ProviderToken.defaultRefreshInterval) throws(APNsConfigurationError) {
        guard Self.allowedRefreshIntervals.contains(refreshInterval) else {
            throw .refreshIntervalOutOfRange(refreshInterval)
        }
        self.signer = signer
        self.clock = clock
        self.refreshInterval = refreshInterval
        let now = clock.now()
        let first = State(bearer: try Self.bearer(signer, now), issuedAt: now, statistics: Statistics(tokensSigned: 1))
        state = Mutex(first)
    }

    /// Loads the key named by `configuration` and signs the first token.
    public convenience init(configuration: APNsConfiguration, clock: any WallClock = SystemClock()) throws(APNsConfigurationError) {
        let signer = try ProviderTokenSigner(keyFile: configuration.keyPath, keyID: configuration.keyID, teamID: configuration.teamID)
        try self.init(signer: signer, clock: clock, refreshInterval: configuration.tokenRefreshInterval)
    }

    /// The `authorization` header value, `bearer <jwt>`, renewed once it is ``refreshInterval`` old.
    public func current() throws(APNsConfigurationError) -> String {
        let now = clock.now()
        return try state.withLock { (state) throws(APNsConfigurationError) -> String in
            if now - state.issuedAt >= refreshInterval { try renew(&state, now) }
            return state.bearer
        }
    }

    /// Handles `403 ExpiredProviderToken` for a request that carried `observedToken`.
    ///
    /// Renews at most once per rejected token (concurrent rejections of the same token see
    /// ``Invalidation/alreadyReplaced``), and never within 20 minutes of the last renewal unless
    /// the token really is 60 minutes old: a rejection of a fresh token means clock skew, which a
    /// storm of new tokens would only turn into `429 TooManyProviderTokenUpdates`.
    public func invalidate(observedToken: String) throws(APNsConfigurationError) -> Invalidation {
        let now = clock.now()
        return try state.withLock { (state) throws(APNsConfigurationError) -> Invalidation in
            guard state.bearer == observedToken else { return .alreadyReplaced }
            let age = now - state.issuedAt
            if age >= Self.maximumAge {
                try renew(&state, now)
                return .renewed(clockSkewSuspected: false)
            }
            state.statistics.clockSkewSuspicions += 1
            if age >= Self.minimumRenewalSpacing {
                try renew(&state, now)
                return .renewed(clockSkewSuspected: true)
            }
            state.statistics.renewalsRefused += 1
            return .refused(notBefore: state.issuedAt + Self.minimumRenewalSpacing)
        }
    }

    /// When the current token was issued (its `iat`).
    public var issuedAt: UnixTime { state.withLock { $0.issuedAt } }

    /// A snapshot of the counters.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    private func renew(_ state: inout State, _ now: UnixTime) throws(APNsConfigurationError) {
        state.bearer = try Self.bearer(signer, now)
        state.issuedAt = now
        state.statistics.tokensSigned += 1
    }

    private static func bearer(_ signer: ProviderTokenSigner, _ now: UnixTime) throws(APNsConfigurationError) -> String {
        "bearer " + (try signer.token(issuedAt: now))
    }
}
