import APNs
import TouchlineCore
import TouchlineRuntime

/// Everything `touchline serve` needs, as one documented value.
///
/// Sources, later ones winning: defaults, the JSON file given with `--config`, `TOUCHLINE_*`
/// environment variables, command-line flags (see `load(arguments:environment:readFile:)`).
/// `validate()` reports every problem found, one line each.
public struct GatewayConfiguration: Sendable, Equatable {
    /// Apps served beside the one of ``apns`` (named `default`), each with its own APNs
    /// credentials, connections and channels (`apps`; docs/configuration.md, "Several apps").
    public var apps: [App] = []
    /// Where pushes go. `.apple` (the default) needs ``apns``: a gateway without credentials
    /// refuses to start rather than come up ready and push to nothing. `.mock` is development
    /// mode: the bundled mock APNs, started in-process, and a generated admin key if none is set.
    public var apnsMode: APNsMode
    /// Apple credentials and endpoints; set exactly when ``apnsMode`` is `.apple`.
    public var apns: APNsSettings?
    /// Where the provider API listens (numeric address).
    public var listenHost: String
    /// Provider API port (0 = any free port, printed at start).
    public var listenPort: Int
    /// Directory of the SQLite database and generated development files.
    public var dataDirectory: String
    /// API keys: each scoped to a channel-id prefix, or an admin key for everything.
    public var apiKeys: [APIKey]
    /// Publishing rules for channels that do not set their own.
    public var defaultPolicy: ChannelPolicy
    /// Largest accepted request body, in bytes.
    public var maxBodyBytes: Int
    /// The personal (per-token) queue: connections, concurrency, window, delivery policy.
    public var personalQueue: PersonalQueueSettings
    /// Log lines below this level are dropped (`log.level`; docs/operations.md describes the lines).
    public var logLevel: LogLevel
    /// `/metrics`: whether it needs a key, and the cap on `channel` labels.
    public var metrics: MetricsSettings
    /// The provider API's connection cap, body budget and deadlines (`http`).
    public var http: HTTPConnectionLimits
    /// Webhook endpoints and their delivery settings (`webhooks`; docs/api.md, "Webhooks").
    public var webhooks = WebhookSettings()
    /// A test hook, never set in production: while this file exists, every commit of both
    /// stores fails as on a full disk (docs/reliability.md). `touchline serve` takes it from
    /// `TOUCHLINE_STORE_FAULT_FILE`, so tests and the soak scenario can fail the disk of a real
    /// process where no small filesystem can be mounted.
    public var storeFaultFile: String?
    /// How long `Idempotency-Key`s are kept (`idempotency`; IdempotencySettings.swift).
    public var idempotency = IdempotencySettings()
    /// The request rate limit of provider keys without a `rateLimit` of their own
    /// (`providerRateLimit`); nil: none. Admin keys are limited only by their own.
    public var providerRateLimit: KeyRateLimit?
    /// What each key may hold and ask for beyond its request rate (`keyLimits`; KeyLimits.swift).
    public var keyLimits = KeyLimits()
    /// Where acknowledged data lives: SQLite in ``dataDirectory`` (the default), or a NATS
    /// JetStream cluster shared with other gateways (`store`; docs/cluster.md).
    public var store = StoreSettings()
    /// How alerts the gateway composes are written for channels that do not choose
    /// (`alerts.mode`): English text, or localization keys the app resolves (``AlertMode``).
    public var alertMode = AlertMode.text
    /// Feed exports (pool, per-key concurrency) and the disk of recordings and shadow channels
    /// (quotas per key and for the gateway): `recordings` (``RecordingLimits``).
    public var recordings = RecordingLimits()

    /// How far past APNs's 20 minutes every app's provider token is renewed when APNs called one
    /// expired early (`apns.tokenRenewalMarginSeconds`; ``ProviderToken/renewalMargin``): APNs
    /// counts its 20 minutes from when it first saw the previous token, later than its signing.
    public var apnsTokenRenewalMargin = ProviderToken.defaultRenewalMargin

    /// Apple's servers, or the bundled mock (development mode).
    public enum APNsMode: String, Sendable, Equatable {
        case apple
        case mock
    }

    /// Apple credentials and endpoint.
    public struct APNsSettings: Sendable, Equatable {
        /// Path of the `.p8` signing key.
        public var keyPath: String
        /// 10-character key id.
        public var keyID: String
        /// 10-character team id.
        public var teamID: String
        /// The app's bundle id.
        public var bundleID: String
        /// production, sandbox, or custom host:port pairs (tests, the mock).
        public var environment: APNsEnvironment
        /// Trust this CA file instead of the system bundle (custom environments).
        public var caFile: String?
        /// Where broadcasts go, when not to the environment's push host (`apns.broadcastHost`):
        /// Apple's prose names the push host, its examples an `api-broadcast` host.
        public var broadcastHost: APNsEndpoint?

        public init(keyPath: String, keyID: String, teamID: String, bundleID: String, environment: APNsEnvironment, caFile: String? = nil,
                    broadcastHost: APNsEndpoint? = nil) {
            self.broadcastHost = broadcastHost
            self.keyPath = keyPath
            self.keyID = keyID
            self.teamID = teamID
            self.bundleID = bundleID
            self.environment = environment
            self.caFile = caFile
        }
    }

    /// An app beside the default one: a provider often serves several (a league's app, a
    /// broadcaster's, their sandbox builds), each with its own bundle id, often its own team and
    /// key. Its channels are its own (`/v1/apps/{name}/...`), and so are its provider token,
    /// APNs connections and queues: one app's trouble at APNs never delays another's pushes.
    public struct App: Sendable, Equatable {
        /// The app's id in paths, keys and metrics: 1 to 32 of `a-z 0-9 -` (``AppChannelID``).
        public var name: String
        /// Its credentials and endpoints, as in the `apns` block (a key may serve several apps
        /// of one team, as Apple allows).
        public var apns: APNsSettings
        /// Publishing rules for its channels that do not set their own (nil: the gateway's).
        public var defaultPolicy: ChannelPolicy?
        /// Its personal queue's own bounds over the gateway's `personalQueue`.
        public var personalQueue: AppPersonalQueueLimits

        public init(name: String, apns: APNsSettings, defaultPolicy: ChannelPolicy? = nil,
                    personalQueue: AppPersonalQueueLimits = AppPersonalQueueLimits()) {
            self.name = name
            self.apns = apns
            self.defaultPolicy = defaultPolicy
            self.personalQueue = personalQueue
        }
    }

    /// A bearer key and what it may touch.
    public struct APIKey: Sendable, Equatable {
        public enum Scope: Sendable, Equatable {
            /// Every channel of every app and every admin operation.
            case admin
            /// The channels of ``APIKey/app`` whose id starts with this prefix.
            case channelPrefix(String)
        }
        public var key: String
        public var scope: Scope
        /// The app a prefix key belongs to (`apiKeys[].app`; `default` unless given).
        public var app: String
        /// This key's request rate limit (`apiKeys[].rateLimit`), over `providerRateLimit`.
        public var rateLimit: KeyRateLimit?
        /// This key's channel and start limits (`apiKeys[].limits`), over `keyLimits`.
        public var limits: KeyLimits.Override?
        /// Follow topics a provider key's kickoffs may address besides its own channels'
        /// `channel:` topics (`apiKeys[].followTopics`): each a topic, or a prefix ending in `*`.
        public var followTopics: [String]

        public init(key: String, scope: Scope, app: String = AppChannelID.defaultApp, rateLimit: KeyRateLimit? = nil,
                    limits: KeyLimits.Override? = nil, followTopics: [String] = []) {
            self.key = key
            self.scope = scope
            self.app = app
            self.rateLimit = rateLimit
            self.limits = limits
            self.followTopics = followTopics
        }
    }

    public init(apnsMode: APNsMode = .apple, apns: APNsSettings? = nil, listenHost: String = "127.0.0.1", listenPort: Int = 8080,
                dataDirectory: String = "./touchline-data", apiKeys: [APIKey] = [], defaultPolicy: ChannelPolicy = .default,
                maxBodyBytes: Int = 1 << 20, personalQueue: PersonalQueueSettings = PersonalQueueSettings(),
                logLevel: LogLevel = .info, metrics: MetricsSettings = MetricsSettings(),
                http: HTTPConnectionLimits = HTTPConnectionLimits()) {
        self.apnsMode = apnsMode
        self.apns = apns
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.dataDirectory = dataDirectory
        self.apiKeys = apiKeys
        self.defaultPolicy = defaultPolicy
        self.maxBodyBytes = maxBodyBytes
        self.personalQueue = personalQueue
        self.logLevel = logLevel
        self.metrics = metrics
        self.http = http
    }
}
