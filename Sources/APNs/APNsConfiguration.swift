import TouchlineCore

/// Everything needed to talk to APNs for one app with token (JWT) authentication.
///
/// A plain value read from the config file or environment; ``ProviderToken/init(configuration:clock:)``
/// and ``APNsRequestEncoder/init(bundleID:environment:)`` validate it and fail with an
/// ``APNsConfigurationError`` that names the bad field.
public struct APNsConfiguration: Sendable, Equatable {
    /// Path of the `.p8` signing key downloaded from the developer portal (PKCS#8 PEM, P-256).
    public var keyPath: String
    /// The 10-character Key ID of that key: the JWT header's `kid`.
    public var keyID: String
    /// The 10-character Team ID that owns the key: the JWT claim `iss`.
    public var teamID: String
    /// The app's plain bundle ID (`com.example.sports`), without a `.push-type.*` suffix: it goes
    /// into broadcast and channel paths, and `apns-topic` is derived from it for device pushes.
    public var bundleID: String
    /// Production, sandbox, or a custom server (tests and load runs).
    public var environment: APNsEnvironment
    /// Where broadcasts go when not to the environment's push host. Apple's broadcast guide names
    /// `api.push.apple.com` in its prose and `api-broadcast.push.apple.com` in its examples, so
    /// operators can follow whichever Apple confirms without a rebuild. nil: the push host.
    public var broadcastHost: APNsEndpoint?
    /// How long one provider token is reused before a new one is signed. APNs rejects tokens older
    /// than 60 minutes and throttles new tokens more often than every 20, so it must lie in
    /// ``ProviderToken/allowedRefreshIntervals``; 50 minutes leaves room for clock drift.
    public var tokenRefreshInterval: Duration
    /// How far past APNs's 20 minutes a token renewal comes when APNs called a token expired
    /// early (clock skew): see ``ProviderToken/renewalMargin``. In ``ProviderToken/allowedRenewalMargins``.
    public var tokenRenewalMargin: Duration

    public init(keyPath: String, keyID: String, teamID: String, bundleID: String,
                environment: APNsEnvironment, broadcastHost: APNsEndpoint? = nil,
                tokenRefreshInterval: Duration = ProviderToken.defaultRefreshInterval,
                tokenRenewalMargin: Duration = ProviderToken.defaultRenewalMargin) {
        self.broadcastHost = broadcastHost
        self.keyPath = keyPath
        self.keyID = keyID
        self.teamID = teamID
        self.bundleID = bundleID
        self.environment = environment
        self.tokenRefreshInterval = tokenRefreshInterval
        self.tokenRenewalMargin = tokenRenewalMargin
    }

    /// Where broadcast publishes go: ``broadcastHost``, or the environment's push host.
    public var broadcastEndpoint: APNsEndpoint { broadcastHost ?? environment.pushEndpoint }
}

/// A configuration problem found at start-up (or, for ``signingFailed(_:)``, when signing).
///
/// Every message names the file or field and the cause, so an operator can fix it without
/// reading code.
public enum APNsConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key file could not be read (missing, unreadable, a directory...).
    case keyFileUnreadable(path: String, cause: String)
    /// The file is not a PEM private key OpenSSL can parse.
    case keyMalformed(path: String, cause: String)
    /// The file holds a passphrase-protected key; APNs `.p8` keys are not encrypted.
    case keyEncrypted(path: String)
    /// The key is not an EC key on P-256 (prime256v1), the only kind ES256 allows.
    case keyNotP256(path: String, found: String)
    /// The Key ID is not 10 letters or digits.
    case invalidKeyID(String)
    /// The Team ID is not 10 letters or digits.
    case invalidTeamID(String)
    /// The bundle ID cannot be used in APNs paths.
    case invalidBundleID(String, why: String)
    /// The token refresh interval lies outside the 20...60 minute window APNs allows.
    case refreshIntervalOutOfRange(Duration)
    /// The token renewal margin lies outside ``ProviderToken/allowedRenewalMargins``.
    case renewalMarginOutOfRange(Duration)
    /// OpenSSL failed to sign a token with a key it had loaded.
    case signingFailed(String)
    /// A key to rotate to signs for another team than the tokens so far: it would serve another
    /// app (every push would fail `InvalidProviderToken`).
    case keyOfAnotherTeam(current: String, new: String)

    public var description: String {
        switch self {
        case .keyFileUnreadable(let path, let cause): "cannot read key file \(path): \(cause)"
        case .keyMalformed(let path, let cause): "key file \(path) is not a PEM private key (\(cause))"
        case .keyEncrypted(let path): "key file \(path) holds an encrypted key; use the unencrypted .p8 file from the developer portal"
        case .keyNotP256(let path, let found): "key file \(path) is not a P-256 EC key (found \(found))"
        case .invalidKeyID(let id): "key id \"\(id)\" must be 10 letters or digits (got \(id.count) characters)"
        case .invalidTeamID(let id): "team id \"\(id)\" must be 10 letters or digits (got \(id.count) characters)"
        case .invalidBundleID(let id, let why): "bundle id \"\(id)\" is not usable: \(why)"
        case .refreshIntervalOutOfRange(let interval):
            "token refresh interval \(interval.inSeconds / 60) min is outside 20...60 min (APNs rejects tokens older than 60 min and throttles renewals within 20 min)"
        case .renewalMarginOutOfRange(let margin):
            "token renewal margin \(Int(margin.inSeconds)) s is outside 0...600 s (a renewal after clock skew must stay well inside the 60-minute limit)"
        case .signingFailed(let cause): "cannot sign the provider token: \(cause)"
        case .keyOfAnotherTeam(let current, let new):
            "the new key's team id \(new) is not the gateway's team \(current); a key of another team serves another app (restart to change the team)"
        }
    }
}
