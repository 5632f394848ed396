import Synchronization
import TouchlineCore
import TouchlineRuntime

/// The one provider token of the process, shared by every connection and every loop.
///
/// APNs rules (reference §4.2): a token older than 60 minutes is rejected with
/// `403 ExpiredProviderToken`, and changing tokens more often than every 20 minutes earns
/// `429 TooManyProviderTokenUpdates`. So the token is signed once, reused by everyone, and
/// replaced when it reaches ``refreshInterval`` (50 minutes by default).
///
/// ``authorization()`` is on every request's path: it reads the clock, takes a lock, compares,
/// and returns the cached `bearer <jwt>` string, which shares its storage with the cache.
/// Thread-safe: the state lives in a `Mutex`.
///
/// **Clock skew.** When APNs calls a token expired that is younger than the renewal spacing (20
/// minutes plus ``renewalMargin``) by our clock, APNs's clock is ahead of ours, and a new token
/// may not be signed yet (20-minute rule). The token then enters a *renewal hold* until the
/// spacing after it was signed: ``authorization()`` answers ``Authorization/hold(until:)`` and
/// senders keep their requests instead of failing them or sending them with a token APNs refuses.
/// At that time the next call signs a new token and the hold ends. Once skew was seen, tokens are
/// renewed every spacing (the shortest interval APNs allows, plus the margin) instead of every
/// ``refreshInterval``, so that a token is replaced before APNs's clock calls it expired whenever
/// that is possible at all. Each hold is logged at error level.
///
/// **The margin.** APNs counts the 20 minutes on a connection from when *it* first saw the
/// previous token there, by its own clock, and that is later than our signing by the time the
/// token took to be first used and to travel; a renewal exactly 20 minutes after our signing can
/// therefore land a little inside APNs's 20 minutes and earn `429 TooManyProviderTokenUpdates`
/// on every connection at once. ``renewalMargin`` (a minute by default) keeps every renewal not
/// forced by the 60-minute limit that much past the 20 minutes.
public final class ProviderToken: Sendable {
    /// The default age at which a token is replaced: well inside the 60-minute limit.
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)
    /// Refresh intervals APNs tolerates: no renewal within 20 minutes, none older than 60.
    public static let allowedRefreshIntervals: ClosedRange<Duration> = .seconds(20 * 60) ... .seconds(60 * 60)
    /// APNs rejects a token older than this.
    public static let maximumAge: Duration = .seconds(60 * 60)
    /// Minimum time between two tokens by APNs's rule, also when APNs claims ours has expired.
    public static let minimumRenewalSpacing: Duration = .seconds(20 * 60)
    /// The default safety margin past ``minimumRenewalSpacing`` (see the type's notes).
    public static let defaultRenewalMargin: Duration = .seconds(60)
    /// Margins accepted: up to 10 minutes, so that a renewal after skew still comes well inside
    /// the 60-minute limit.
    public static let allowedRenewalMargins: ClosedRange<Duration> = .zero ... .seconds(10 * 60)

    /// What a request should carry, from ``authorization()``.
    public enum Authorization: Sendable, Equatable {
        /// The `authorization` header value, `bearer <jwt>`.
        case bearer(String)
        /// APNs rejected the current token as expired and no new one may be signed before
        /// `until`: keep the request (do not fail it) and ask again then.
        case hold(until: UnixTime)
    }

    /// The outcome of ``invalidate(observedToken:)``.
    public enum Invalidation: Sendable, Equatable {
        /// The rejected token had already been replaced: retry with ``current()``.
        case alreadyReplaced
        /// A new token was signed: retry with ``current()``. `clockSkewSuspected` is true when the
        /// rejected token was younger than 60 minutes by our clock, so APNs's clock and ours
        /// disagree; operators should check NTP.
        case renewed(clockSkewSuspected: Bool)
        /// The token is younger than the renewal spacing (20 minutes plus the margin) by our
        /// clock, so renewing would break APNs's renewal limit: our clock is probably behind. The
        /// token is in a renewal hold: keep the request and send it again at `notBefore`, when
        /// ``authorization()`` signs a new token.
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
        /// Renewal holds entered: periods in which requests waited for the 20-minute rule.
        public var renewalHolds = 0
        /// Keys rotated to (``replaceKey(with:)``).
        public var keyRotations = 0

        public init(tokensSigned: Int = 0, clockSkewSuspicions: Int = 0, renewalsRefused: Int = 0, renewalHolds: Int = 0) {
            self.tokensSigned = tokensSigned
            self.clockSkewSuspicions = clockSkewSuspicions
            self.renewalsRefused = renewalsRefused
            self.renewalHolds = renewalHolds
        }
    }

    private struct State {
        var signer: ProviderTokenSigner
        var bearer: String
        var issuedAt: UnixTime
        var statistics: Statistics
        /// Set while the current token is rejected and may not be replaced yet: the time it may.
        var holdUntil: UnixTime?
        /// APNs's clock was seen ahead of ours: renew as often as APNs allows from now on.
        var skewSeen = false
    }

    /// The clock tokens are dated and aged by; senders holding requests wait by it too.
    let clock: any WallClock
    private let log: GatewayLog?
    /// How old a token may get before it is replaced (the renewal spacing once clock skew was seen).
    public let refreshInterval: Duration
    /// How far past APNs's 20 minutes a renewal not forced by the 60-minute limit comes.
    public let renewalMargin: Duration
    /// The least time between two tokens this gives: ``minimumRenewalSpacing`` plus ``renewalMargin``.
    public var renewalSpacing: Duration { Self.minimumRenewalSpacing + renewalMargin }
    private let state: Mutex<State>

    /// Signs the first token right away, so key problems surface at start-up. `log` receives the
    /// error-level line of each renewal hold (clock skew), for operators.
    public init(signer: ProviderTokenSigner, clock: any WallClock = SystemClock(),
                refreshInterval: Duration = ProviderToken.defaultRefreshInterval,
                renewalMargin: Duration = ProviderToken.defaultRenewalMargin, log: GatewayLog? = nil) throws(APNsConfigurationError) {
        guard Self.allowedRefreshIntervals.contains(refreshInterval) else {
            throw .refreshIntervalOutOfRange(refreshInterval)
        }
        guard Self.allowedRenewalMargins.contains(renewalMargin) else {
            throw .renewalMarginOutOfRange(renewalMargin)
        }
        self.clock = clock
        self.refreshInterval = refreshInterval
        self.renewalMargin = renewalMargin
        self.log = log
        let now = clock.now()
        let first = State(signer: signer, bearer: try Self.bearer(signer, now), issuedAt: now, statistics: Statistics(tokensSigned: 1))
        state = Mutex(first)
    }

    /// Loads the key named by `configuration` and signs the first token.
    public convenience init(configuration: APNsConfiguration, clock: any WallClock = SystemClock(),
                            log: GatewayLog? = nil) throws(APNsConfigurationError) {
        let signer = try ProviderTokenSigner(keyFile: configuration.keyPath, keyID: configuration.keyID, teamID: configuration.teamID)
        try self.init(signer: signer, clock: clock, refreshInterval: configuration.tokenRefreshInterval,
                      renewalMargin: configuration.tokenRenewalMargin, log: log)
    }

    /// What the next request should carry: the current token (renewed once it is due, or once a
    /// renewal hold is over), or ``Authorization/hold(until:)`` during a renewal hold.
    public func authorization() throws(APNsConfigurationError) -> Authorization {
        let now = clock.now()
        var endedHold = false
        let result = try state.withLock { (state) throws(APNsConfigurationError) -> Authorization in
            if let until = state.holdUntil {
                guard now >= until else { return .hold(until: until) }
                try renew(&state, now)
                endedHold = true
            } else if now - state.issuedAt >= (state.skewSeen ? renewalSpacing : refreshInterval) {
                try renew(&state, now)
            }
            return .bearer(state.bearer)
        }
        if endedHold {
            log?.notice("a new APNs provider token was signed after the renewal hold; held requests are sent again")
        }
        return result
    }

    /// The `authorization` header value, `bearer <jwt>`, renewed when due. During a renewal hold
    /// this is the token APNs rejected: senders use ``authorization()``, which says to wait.
    public func current() throws(APNsConfigurationError) -> String {
        switch try authorization() {
        case .bearer(let bearer): return bearer
        case .hold: return state.withLock { $0.bearer }
        }
    }

    /// The end of the renewal hold in force, if any (it ends at the first ``authorization()``
    /// at or after that time).
    public var renewalHold: UnixTime? { state.withLock { $0.holdUntil } }

    /// Handles `403 ExpiredProviderToken` for a request that carried `observedToken`.
    ///
    /// Renews at most once per rejected token (concurrent rejections of the same token see
    /// ``Invalidation/alreadyReplaced``), and never within the renewal spacing (20 minutes plus
    /// the margin) of the last renewal unless the token really is 60 minutes old: a rejection of
    /// a fresh token means clock skew, which a storm of new tokens would only turn into
    /// `429 TooManyProviderTokenUpdates`.
    ///
    /// A refusal puts the token in a renewal hold until the spacing after it was signed (see the
    /// type's notes); the first refusal of a hold is logged at error level, as is a renewal
    /// because of suspected skew.
    public func invalidate(observedToken: String) throws(APNsConfigurationError) -> Invalidation {
        let now = clock.now()
        var age = Duration.zero
        var newHold = false
        let result = try state.withLock { (state) throws(APNsConfigurationError) -> Invalidation in
            guard state.bearer == observedToken else { return .alreadyReplaced }
            age = now - state.issuedAt
            if age >= Self.maximumAge {
                try renew(&state, now)
                return .renewed(clockSkewSuspected: false)
            }
            state.statistics.clockSkewSuspicions += 1
            state.skewSeen = true
            if age >= renewalSpacing {
                try renew(&state, now)
                return .renewed(clockSkewSuspected: true)
            }
            state.statistics.renewalsRefused += 1
            let notBefore = state.issuedAt + renewalSpacing
            if state.holdUntil == nil {
                state.holdUntil = notBefore
                state.statistics.renewalHolds += 1
                newHold = true
            }
            return .refused(notBefore: notBefore)
        }
        switch result {
        case .refused(let notBefore) where newHold:
            log?.error("APNs rejected the provider token as expired (ExpiredProviderToken) \(Self.minutes(age)) after it was signed, "
                + "so APNs's clock is ahead of ours: check NTP. A new token may be signed only 20 minutes after the last one "
                + "(\(Self.minutes(renewalSpacing)) with the safety margin); requests are held until then (Unix time \(notBefore.seconds)), "
                + "and tokens are renewed every \(Self.minutes(renewalSpacing)) from now on")
        case .renewed(clockSkewSuspected: true):
            log?.error("APNs rejected the provider token as expired (ExpiredProviderToken) \(Self.minutes(age)) after it was signed, "
                + "so APNs's clock is ahead of ours: check NTP. A new token was signed; tokens are renewed every "
                + "\(Self.minutes(renewalSpacing)) from now on")
        default:
            break
        }
        return result
    }

    /// Whether `signer` could replace the current key (``replaceKey(with:)``): of the same team,
    /// and able to sign. Changes nothing.
    public func check(_ signer: ProviderTokenSigner) throws(APNsConfigurationError) {
        let current = state.withLock { $0.signer }
        guard signer.teamID == current.teamID else { throw .keyOfAnotherTeam(current: current.teamID, new: signer.teamID) }
        _ = try signer.token(issuedAt: clock.now())
    }

    /// Signs with `signer` from now on (a rotated or replaced `.p8` key): it must be of the same
    /// team, and it signs the next token at once, so a key that cannot sign is refused here and the
    /// current key stays. The new token is used by the next request (a revoked key's token would
    /// fail every push until its renewal otherwise); a renewal hold in force ends with it.
    public func replaceKey(with signer: ProviderTokenSigner) throws(APNsConfigurationError) {
        let now = clock.now()
        let current = state.withLock { $0.signer }
        guard signer.teamID == current.teamID else { throw .keyOfAnotherTeam(current: current.teamID, new: signer.teamID) }
        let bearer = try Self.bearer(signer, now)
        state.withLock { state in
            state.signer = signer
            state.bearer = bearer
            state.issuedAt = now
            state.holdUntil = nil
            state.statistics.tokensSigned += 1
            state.statistics.keyRotations += 1
        }
    }

    /// The key the tokens are signed with now (its `kid`).
    public var keyID: String { state.withLock { $0.signer.keyID } }
    /// The team the tokens are issued by (their `iss`).
    public var teamID: String { state.withLock { $0.signer.teamID } }

    /// When the current token was issued (its `iat`).
    public var issuedAt: UnixTime { state.withLock { $0.issuedAt } }

    /// A snapshot of the counters.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    private func renew(_ state: inout State, _ now: UnixTime) throws(APNsConfigurationError) {
        state.bearer = try Self.bearer(state.signer, now)
        state.issuedAt = now
        state.holdUntil = nil
        state.statistics.tokensSigned += 1
    }

    private static func minutes(_ age: Duration) -> String {
        let seconds = Int(age.inSeconds.rounded())
        return "\(seconds / 60) min \(seconds % 60) s"
    }

    private static func bearer(_ signer: ProviderTokenSigner, _ now: UnixTime) throws(APNsConfigurationError) -> String {
        "bearer " + (try signer.token(issuedAt: now))
    }
}
