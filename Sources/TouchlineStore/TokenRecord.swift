import TouchlineCore

/// What a device token is for. Stored as its raw text.
public enum TokenKind: String, Sendable, CaseIterable {
    /// Updates one running Live Activity (issued per activity, so tied to a channel).
    case update
    /// Starts a new Live Activity remotely (issued per app install).
    case pushToStart
}

/// Which APNs host a token belongs to. Stored as its raw text.
public enum TokenEnvironment: String, Sendable, CaseIterable {
    case production
    case sandbox
}

/// One registered device token.
public struct TokenRecord: Sendable, Equatable {
    /// Lowercase hex, as APNs expects it in the request path.
    public var token: String
    public var kind: TokenKind
    /// The channel (match) whose activity issued an update token; nil for push-to-start.
    public var channelID: String?
    public var userID: String?
    /// What the holder follows ("team:ARS", "channel:match-1"): the audience of kickoff starts.
    public var follows: [String]
    public var environment: TokenEnvironment
    public var registeredAt: UnixTime
    public var active: Bool
    public var deactivatedAt: UnixTime?
    /// The app the token was registered for (``AppChannelID``): a device token works for one
    /// app's bundle id only, so only that app's audiences ever select it.
    public var app: String

    /// `token` is lowercased here, so every lookup and every comparison sees one spelling.
    public init(token: String, kind: TokenKind, channelID: String? = nil, userID: String? = nil, follows: [String] = [],
                environment: TokenEnvironment = .production, registeredAt: UnixTime, active: Bool = true,
                deactivatedAt: UnixTime? = nil, app: String = AppChannelID.defaultApp) {
        self.app = app
        self.token = token.lowercased()
        self.kind = kind
        self.channelID = channelID
        self.userID = userID
        self.follows = follows
        self.environment = environment
        self.registeredAt = registeredAt
        self.active = active
        self.deactivatedAt = deactivatedAt
    }
}

/// A token handed out by the follows scan: just what a request needs.
public struct TokenTarget: Sendable, Equatable {
    public var token: String
    public var environment: TokenEnvironment

    public init(token: String, environment: TokenEnvironment) {
        self.token = token
        self.environment = environment
    }
}
