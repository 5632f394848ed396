import APNs
import CommandLineOptions
import TouchlineCore
import TouchlineRuntime

/// One gateway setting, declared once: its JSON key, its command-line option (flag, value name,
/// help, environment variable), how it is named in messages, whether it is a secret, how its
/// text is read, and how its resolved value is shown.
///
/// Flag parsing, environment reading, error hints ("set apns.teamID, TOUCHLINE_APNS_TEAM_ID or
/// --apns-team-id"), `touchline serve --help` and `--check-config` all read ``all``, so a new
/// setting is one more declaration here and cannot be missing from any of them.
struct ConfigurationSetting: Sendable, Hashable {
    /// The member path in the JSON file; nil for `--config` itself.
    let fileKey: String?
    /// The flag, its value, its help line and its environment variable.
    let option: OptionDeclaration
    /// The setting in words, as messages name it.
    let title: String
    /// Whether the value is shown by `--check-config` (key contents are not; key paths are).
    let isSecret: Bool
    /// Sets the setting in a layer from the text of an environment variable or flag; a failure
    /// is a predicate ("must be HOST:PORT, got …") the caller puts the title in front of.
    let read: @Sendable (inout ConfigurationLayer, String, ConfigurationSource) throws(InvalidConfigurationValue) -> Void
    /// The resolved value as `--check-config` prints it (nil: not set); secrets are left out by the report.
    let show: @Sendable (GatewayConfiguration) -> String?

    var flag: String { option.name }
    /// Every setting has one.
    var environmentVariable: String { option.environmentVariable! }
    /// What the value looks like, for messages ("--listen ADDRESS:PORT"); empty for `--dev`.
    var valueName: String { option.valueName ?? "" }

    /// "set apns.teamID, TOUCHLINE_APNS_TEAM_ID or --apns-team-id"
    var whereToSet: String {
        let places = [fileKey, environmentVariable, flag].compactMap { $0 }
        return "set " + places.dropLast().joined(separator: ", ") + " or " + places.last!
    }

    static func == (a: Self, b: Self) -> Bool { a.flag == b.flag }
    func hash(into hasher: inout Hasher) { hasher.combine(flag) }

    static func byFlag(_ flag: String) -> ConfigurationSetting? { all.first { $0.flag == flag } }

    /// Every setting, in the order of the help text.
    static let all: [ConfigurationSetting] = [
        .config, .development, .listen, .dataDirectory, .maxBodyBytes, .apnsKeyPath, .apnsKeyID, .apnsTeamID, .apnsBundleID,
        .apnsEnvironment, .apnsCAFile, .apnsBroadcastHost, .apnsTokenRenewalMargin, .adminKey, .apiKeys, .defaultPolicy, .personalQueue, .logLevel, .metrics,
        .http, .webhooks, .idempotency, .providerRateLimit, .store, .alertMode,
        .recordings,
        .keyLimits,
    ]
}

extension ConfigurationSetting {
    private init(_ flag: String, _ valueName: String?, file fileKey: String?, environment variable: String, title: String,
                 secret: Bool = false, repeatable: Bool = false, help: String,
                 read: @escaping @Sendable (inout ConfigurationLayer, String, ConfigurationSource) throws(InvalidConfigurationValue) -> Void,
                 show: @escaping @Sendable (GatewayConfiguration) -> String?) {
        let option: OptionDeclaration = switch (valueName, repeatable) {
        case (nil, _): .toggle(flag, help: help, environmentVariable: variable)
        case (let name?, false): .value(flag, name, help: help, environmentVariable: variable)
        case (let name?, true): .repeated(flag, name, help: help, environmentVariable: variable)
        }
        self.init(fileKey: fileKey, option: option, title: title, isSecret: secret, read: read, show: show)
    }

    static let config = Self(
        "--config", "PATH", file: nil, environment: "TOUCHLINE_CONFIG", title: "configuration file",
        help: "JSON configuration file (lowest precedence after the defaults)",
        read: { $0.configPath = SourcedSetting(value: $1, source: $2) }, show: { _ in nil })
    static let development = Self(
        "--dev", nil, file: "apns.mode", environment: "TOUCHLINE_DEV", title: "development mode",
        help: "development mode: the bundled mock APNs instead of Apple (TOUCHLINE_DEV=1, apns.mode \"mock\"); never in production",
        read: { layer, text, source throws(InvalidConfigurationValue) in layer.development = SourcedSetting(value: try parseSwitch(text), source: source) },
        show: { $0.apnsMode == .mock ? "on (mock: the bundled mock APNs)" : "off (apple)" })
    static let listen = Self(
        "--listen", "ADDRESS:PORT", file: "listen", environment: "TOUCHLINE_LISTEN", title: "listen address",
        help: "provider API address, numeric (default 127.0.0.1:8080; port 0 = any free port)",
        read: { layer, text, source throws(InvalidConfigurationValue) in layer.listen = SourcedSetting(value: try ConfigurationHostPort(parsing: text), source: source) },
        show: { $0.listenHost.contains(":") ? "[\($0.listenHost)]:\($0.listenPort)" : "\($0.listenHost):\($0.listenPort)" })
    static let dataDirectory = Self(
        "--data-dir", "DIR", file: "dataDirectory", environment: "TOUCHLINE_DATA_DIR", title: "data directory",
        help: "SQLite database and generated files (default ./touchline-data)",
        read: { $0.dataDirectory = SourcedSetting(value: $1, source: $2) }, show: { $0.dataDirectory })
    static let maxBodyBytes = Self(
        "--max-body-bytes", "BYTES", file: "maxBodyBytes", environment: "TOUCHLINE_MAX_BODY_BYTES", title: "maximum body size",
        help: "largest accepted request body (default 1048576)",
        read: { layer, text, source throws(InvalidConfigurationValue) in layer.maxBodyBytes = SourcedSetting(value: try parseByteCount(text), source: source) },
        show: { String($0.maxBodyBytes) })
    static let apnsKeyPath = Self(
        "--apns-key", "PATH", file: "apns.keyPath", environment: "TOUCHLINE_APNS_KEY_PATH", title: "APNs key path",
        help: "APNs .p8 signing key; the four APNs credentials go together",
        read: { $0.keyPath = SourcedSetting(value: $1, source: $2) }, show: { $0.apns?.keyPath })
    static let apnsKeyID = Self(
        "--apns-key-id", "ID", file: "apns.keyID", environment: "TOUCHLINE_APNS_KEY_ID", title: "APNs key id",
        help: "10-character key id of that key",
        read: { $0.keyID = SourcedSetting(value: $1, source: $2) }, show: { $0.apns?.keyID })
    static let apnsTeamID = Self(
        "--apns-team-id", "ID", file: "apns.teamID", environment: "TOUCHLINE_APNS_TEAM_ID", title: "APNs team id",
        help: "10-character team id",
        read: { $0.teamID = SourcedSetting(value: $1, source: $2) }, show: { $0.apns?.teamID })
    static let apnsBundleID = Self(
        "--apns-bundle-id", "BUNDLE_ID", file: "apns.bundleID", environment: "TOUCHLINE_APNS_BUNDLE_ID", title: "APNs bundle id",
        help: "the app's bundle id, without .push-type.liveactivity",
        read: { $0.bundleID = SourcedSetting(value: $1, source: $2) }, show: { $0.apns?.bundleID })
    static let apnsEnvironment = Self(
        "--apns-environment", "ENV", file: "apns.environment", environment: "TOUCHLINE_APNS_ENVIRONMENT", title: "APNs environment",
        help: "production (default), sandbox, or PUSHHOST:PORT,MANAGEMENTHOST:PORT",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.environment = SourcedSetting(value: try APNsEnvironment(configurationText: text), source: source)
        },
        show: { $0.apns.map { ConfigurationValueText.environment($0.environment) } })
    static let apnsCAFile = Self(
        "--apns-ca-file", "PATH", file: "apns.caFile", environment: "TOUCHLINE_APNS_CA_FILE", title: "APNs CA file",
        help: "trust this CA file for APNs instead of the system bundle",
        read: { $0.caFile = SourcedSetting(value: $1, source: $2) }, show: { $0.apns?.caFile })
    static let apnsBroadcastHost = Self(
        "--apns-broadcast-host", "HOST[:PORT]", file: "apns.broadcastHost", environment: "TOUCHLINE_APNS_BROADCAST_HOST",
        title: "APNs broadcast host",
        help: "send broadcasts here instead of the push host (default: the push host, api.push.apple.com)",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.broadcastHost = SourcedSetting(value: try parseBroadcastHost(text), source: source)
        },
        show: { $0.apns?.broadcastHost.map { "\($0.host):\($0.port)" } })
    static let apnsTokenRenewalMargin = Self(
        "--apns-token-renewal-margin", "SECONDS", file: "apns.tokenRenewalMarginSeconds", environment: "TOUCHLINE_APNS_TOKEN_RENEWAL_MARGIN",
        title: "APNs token renewal margin",
        help: "renew a provider token APNs called expired early this long past its 20 minutes (0 to 600, default 60)",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.tokenRenewalMargin = SourcedSetting(value: try parseSeconds(text), source: source)
        },
        show: { "\($0.apnsTokenRenewalMargin.inNanoseconds / 1_000_000_000) s" })
    static let adminKey = Self(
        "--admin-key", "KEY", file: "apiKeys[].admin", environment: "TOUCHLINE_ADMIN_KEY", title: "admin API key", secret: true,
        repeatable: true, help: "API key allowed everything (repeatable)",
        read: { $0.adminKeys = ($0.adminKeys ?? []) + [SourcedSetting(value: .init(key: $1, scope: .admin), source: $2)] },
        show: { _ in nil })
    static let apiKeys = Self(
        "--api-key", "KEY=PREFIX", file: "apiKeys[].channelPrefix", environment: "TOUCHLINE_API_KEYS", title: "provider API keys",
        secret: true, repeatable: true,
        help: "API key allowed channels whose id starts with PREFIX (repeatable; several: K1=P1,K2=P2)",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.providerKeys = (layer.providerKeys ?? []) + (try parseProviderKeys(text)).map { SourcedSetting(value: $0, source: source) }
        },
        show: { _ in nil })
    static let defaultPolicy = Self(
        "--default-policy", "JSON", file: "defaultPolicy", environment: "TOUCHLINE_DEFAULT_POLICY", title: "default channel policy",
        help: "channel policy for channels without their own, as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.defaultPolicy = SourcedSetting(value: try ChannelPolicy(configured: try parseJSON(text)), source: source)
        },
        show: { String(decoding: $0.defaultPolicy.json.encoded, as: UTF8.self) })
    static let personalQueue = Self(
        "--personal-queue", "JSON", file: "personalQueue", environment: "TOUCHLINE_PERSONAL_QUEUE", title: "personal queue settings",
        help: "personal queue: connections, maxInFlight, window, delivery policy..., as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.personalQueue = SourcedSetting(value: try PersonalQueueSettings(json: try parseJSON(text)), source: source)
        },
        show: { ConfigurationValueText.fields(of: $0.personalQueue) })
    static let alertMode = Self(
        "--alerts-mode", "MODE", file: "alerts.mode", environment: "TOUCHLINE_ALERTS_MODE", title: "alert mode",
        help: "how composed alerts are written for channels that do not choose: text (default) or localized (loc-key and loc-args)",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.alertMode = SourcedSetting(value: try AlertMode(configurationText: text), source: source)
        },
        show: { $0.alertMode.rawValue })
    static let logLevel = Self(
        "--log-level", "LEVEL", file: "log.level", environment: "TOUCHLINE_LOG_LEVEL", title: "log level",
        help: "lowest level logged: debug, info (default), notice, warning or error",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.logLevel = SourcedSetting(value: try LogLevel(configurationText: text), source: source)
        },
        show: { $0.logLevel.name })
    static let metrics = Self(
        "--metrics", "JSON", file: "metrics", environment: "TOUCHLINE_METRICS", title: "metrics settings",
        help: "/metrics: requireKey (default false), maxChannelLabels (default 200), as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.metrics = SourcedSetting(value: try MetricsSettings(json: try parseJSON(text)), source: source)
        },
        show: { ConfigurationValueText.fields(of: $0.metrics) })
    static let http = Self(
        "--http", "JSON", file: "http", environment: "TOUCHLINE_HTTP", title: "HTTP settings",
        help: "provider API: maxConnections (1024), per address (128), probe reserve (16), body budget and per key, "
            + "first-request/head/body/idle/write timeouts..., as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.http = SourcedSetting(value: try HTTPConnectionLimits(json: try parseJSON(text)), source: source)
        },
        show: { ConfigurationValueText.fields(of: $0.http) })
    static let webhooks = Self(
        "--webhooks", "JSON", file: "webhooks", environment: "TOUCHLINE_WEBHOOKS", title: "webhook settings",
        help: "webhook endpoints (url, secret, events, name) and retry, dead-letter age, timeout, retention, as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.webhooks = SourcedSetting(value: try WebhookSettings(json: try parseJSON(text)), source: source)
        },
        show: { ConfigurationValueText.webhooks($0.webhooks) })
    static let idempotency = Self(
        "--idempotency", "JSON", file: "idempotency", environment: "TOUCHLINE_IDEMPOTENCY", title: "idempotency settings",
        help: "Idempotency-Key records: keyLifetimeSeconds (default 86400), as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.idempotency = SourcedSetting(value: try IdempotencySettings(json: try parseJSON(text)), source: source)
        },
        show: { "keyLifetime: \(ConfigurationValueText.duration($0.idempotency.keyLifetime))" })
    static let recordings = Self(
        "--recordings", "JSON", file: "recordings", environment: "TOUCHLINE_RECORDINGS", title: "exports and recordings",
        help: "feed exports at once (4) and per key (2); recorded bytes (8 GiB) and shadow channels (1000), each also per key, as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.recordings = SourcedSetting(value: try RecordingLimits(json: try parseJSON(text)), source: source)
        },
        show: { ConfigurationValueText.fields(of: $0.recordings) })
    static let providerRateLimit = Self(
        "--provider-rate-limit", "JSON", file: "providerRateLimit", environment: "TOUCHLINE_PROVIDER_RATE_LIMIT",
        title: "provider rate limit",
        help: "request limit of provider keys without their own: requestsPerSecond and burst, as JSON (default none)",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.providerRateLimit = SourcedSetting(value: try KeyRateLimit(json: try parseJSON(text)), source: source)
        },
        show: { $0.providerRateLimit.map { ConfigurationValueText.fields(of: $0) } ?? "none" })
    static let keyLimits = Self(
        "--key-limits", "JSON", file: "keyLimits", environment: "TOUCHLINE_KEY_LIMITS", title: "key limits",
        help: "per provider key: channels (1000), startsPerHour (120) and startBurst (1000) of kickoffs and rollovers; rolloverIntervalSeconds (600) per channel, as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.keyLimits = SourcedSetting(value: try KeyLimits(json: try parseJSON(text)), source: source)
        },
        show: { ConfigurationValueText.fields(of: $0.keyLimits) })
    static let store = Self(
        "--store", "JSON", file: "store", environment: "TOUCHLINE_STORE", title: "store settings",
        help: "where acknowledged data lives: {\"backend\": \"sqlite\"} (default) or \"jetstream\" with servers, instance, prefix, replicas, partitions..., as JSON",
        read: { layer, text, source throws(InvalidConfigurationValue) in
            layer.store = SourcedSetting(value: try StoreSettings(json: try parseJSON(text), defaultInstance: StoreSettings.hostInstance), source: source)
        },
        show: { $0.store.jetStream.map { "jetstream: \($0.summary)" } ?? "sqlite (in the data directory)" })
}

extension GatewayConfiguration {
    /// The options of every setting, for `touchline serve`'s declaration: its parser and `--help`.
    public static var commandLineOptions: [OptionDeclaration] { ConfigurationSetting.all.map(\.option) }

    /// The flags `touchline serve` accepts with their help and environment variables, as `--help` lists them.
    public static var commandLineHelp: String { HelpText.optionTable(commandLineOptions) }
}

extension GatewayConfigurationError {
    /// The closest of `candidates` to a mistyped `name`, for "did you mean" hints (the
    /// command line's rule, so flags and file keys are suggested alike).
    static func closestName(to name: String, among candidates: [String]) -> String? {
        NameSuggestion.closest(to: name, among: candidates)
    }
}

private func parseJSON(_ text: String) throws(InvalidConfigurationValue) -> JSONValue {
    do {
        return try JSONParser.parse(Array(text.utf8))
    } catch {
        throw InvalidConfigurationValue("is not valid JSON: \(error)")
    }
}
