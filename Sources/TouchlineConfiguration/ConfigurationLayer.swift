import APNs
import CommandLineOptions
import Foundation
import TouchlineCore
import TouchlineRuntime

/// A value with the place it was set.
struct SourcedSetting<Value> {
    var value: Value
    var source: ConfigurationSource
}

/// What one source (the file, the environment or the flags) sets; nil = not set there.
///
/// Layers are stacked with `overlay`: each setting of the later layer replaces the earlier one.
/// API keys are two settings, admin keys and provider keys, each replaced as a whole list, so a
/// later source can take every key of one kind away from an earlier one.
struct ConfigurationLayer {
    var configPath: SourcedSetting<String>?
    /// Development mode (`--dev`, `TOUCHLINE_DEV`, `apns.mode`): true = the bundled mock APNs.
    var development: SourcedSetting<Bool>?
    var listen: SourcedSetting<ConfigurationHostPort>?
    var dataDirectory: SourcedSetting<String>?
    var maxBodyBytes: SourcedSetting<Int>?
    var keyPath: SourcedSetting<String>?
    var keyID: SourcedSetting<String>?
    var teamID: SourcedSetting<String>?
    var bundleID: SourcedSetting<String>?
    var environment: SourcedSetting<APNsEnvironment>?
    var caFile: SourcedSetting<String>?
    var broadcastHost: SourcedSetting<APNsEndpoint>?
    var tokenRenewalMargin: SourcedSetting<Duration>?
    var adminKeys: [SourcedSetting<GatewayConfiguration.APIKey>]?
    var providerKeys: [SourcedSetting<GatewayConfiguration.APIKey>]?
    var defaultPolicy: SourcedSetting<ChannelPolicy>?
    var personalQueue: SourcedSetting<PersonalQueueSettings>?
    var logLevel: SourcedSetting<LogLevel>?
    var metrics: SourcedSetting<MetricsSettings>?
    var http: SourcedSetting<HTTPConnectionLimits>?
    var webhooks: SourcedSetting<WebhookSettings>?
    var idempotency: SourcedSetting<IdempotencySettings>?
    var providerRateLimit: SourcedSetting<KeyRateLimit>?
    var keyLimits: SourcedSetting<KeyLimits>?
    var store: SourcedSetting<StoreSettings>?
    var alertMode: SourcedSetting<AlertMode>?
    var recordings: SourcedSetting<RecordingLimits>?
    /// Further apps (`apps`, from the file only: each is a structured entry).
    var apps: [SourcedSetting<GatewayConfiguration.App>]?

    mutating func overlay(_ later: ConfigurationLayer) {
        configPath = later.configPath ?? configPath
        development = later.development ?? development
        listen = later.listen ?? listen
        dataDirectory = later.dataDirectory ?? dataDirectory
        maxBodyBytes = later.maxBodyBytes ?? maxBodyBytes
        keyPath = later.keyPath ?? keyPath
        keyID = later.keyID ?? keyID
        teamID = later.teamID ?? teamID
        bundleID = later.bundleID ?? bundleID
        environment = later.environment ?? environment
        caFile = later.caFile ?? caFile
        broadcastHost = later.broadcastHost ?? broadcastHost
        tokenRenewalMargin = later.tokenRenewalMargin ?? tokenRenewalMargin
        adminKeys = later.adminKeys ?? adminKeys
        providerKeys = later.providerKeys ?? providerKeys
        defaultPolicy = later.defaultPolicy ?? defaultPolicy
        personalQueue = later.personalQueue ?? personalQueue
        logLevel = later.logLevel ?? logLevel
        metrics = later.metrics ?? metrics
        http = later.http ?? http
        webhooks = later.webhooks ?? webhooks
        idempotency = later.idempotency ?? idempotency
        providerRateLimit = later.providerRateLimit ?? providerRateLimit
        keyLimits = later.keyLimits ?? keyLimits
        store = later.store ?? store
        recordings = later.recordings ?? recordings
        alertMode = later.alertMode ?? alertMode
        apps = later.apps ?? apps
    }

    /// Sets `setting` from the text of an environment variable or flag. Admin and provider keys
    /// accumulate within the layer (repeated flags); everything else is last-one-wins.
    mutating func set(_ setting: ConfigurationSetting, text: String, source: ConfigurationSource) throws(InvalidConfigurationValue) {
        try setting.read(&self, text, source)
    }
}

/// A value that cannot be understood. The message is a predicate ("must be HOST:PORT, got
/// \"x\""); the caller puts the setting's name in front and adds where it came from.
struct InvalidConfigurationValue: Error {
    var predicate: String
    init(_ predicate: String) { self.predicate = predicate }
}

/// `address:port`, with IPv6 addresses in brackets (`[::1]:8080`).
struct ConfigurationHostPort: Equatable {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init(parsing text: String) throws(InvalidConfigurationValue) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw InvalidConfigurationValue("must be [IPV6]:PORT, got \"\(text)\"") }
            portPart = rest.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard !hostPart.contains(":") else { throw InvalidConfigurationValue("must have an IPv6 address in brackets, as in [::1]:8080, got \"\(text)\"") }
        } else {
            throw InvalidConfigurationValue("must be HOST:PORT, got \"\(text)\"")
        }
        guard !hostPart.isEmpty else { throw InvalidConfigurationValue("has no host before the port in \"\(text)\"") }
        guard !portPart.isEmpty, portPart.count <= 5, portPart.utf8.allSatisfy({ (48...57).contains($0) }), let port = Int(portPart) else {
            throw InvalidConfigurationValue("has no valid port number after the colon in \"\(text)\"")
        }
        self.init(host: String(hostPart), port: port)
    }
}

/// On or off, as environment variables and flags say it: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`.
func parseSwitch(_ text: String) throws(InvalidConfigurationValue) -> Bool {
    guard let on = ParsedArguments.switchWord(text) else { throw InvalidConfigurationValue("must be 1 or 0 (true or false), got \"\(text)\"") }
    return on
}

/// `HOST` (port 443) or `HOST:PORT`: where broadcasts go.
func parseBroadcastHost(_ text: String) throws(InvalidConfigurationValue) -> APNsEndpoint {
    let endpoint: APNsEndpoint
    if text.contains(":") {
        let parsed = try ConfigurationHostPort(parsing: text)
        guard (1...65535).contains(parsed.port) else { throw InvalidConfigurationValue("has port \(parsed.port), outside 1-65535") }
        endpoint = APNsEndpoint(host: parsed.host, port: parsed.port)
    } else {
        endpoint = APNsEndpoint(host: text, port: 443)
    }
    let allowed = endpoint.host.utf8.allSatisfy { byte in
        (0x61...0x7A).contains(byte | 0x20) || (0x30...0x39).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ":")
    }
    guard !endpoint.host.isEmpty, endpoint.host.utf8.count <= 253, allowed else {
        throw InvalidConfigurationValue("must be a host name or address, optionally with :PORT, got \"\(text)\"")
    }
    return endpoint
}

/// A whole number of seconds, from the text of a flag or variable (the range is checked later).
func parseSeconds(_ text: String) throws(InvalidConfigurationValue) -> Duration {
    guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text) else {
        throw InvalidConfigurationValue("must be a whole number of seconds, got \"\(text)\"")
    }
    return .seconds(value)
}

/// A positive decimal count of bytes.
func parseByteCount(_ text: String) throws(InvalidConfigurationValue) -> Int {
    guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text) else {
        throw InvalidConfigurationValue("must be a whole number of bytes, got \"\(text)\"")
    }
    return value
}

extension APNsEnvironment {
    /// `production`, `sandbox`, or `PUSHHOST:PORT,MANAGEMENTHOST:PORT` for any other server.
    init(configurationText text: String) throws(InvalidConfigurationValue) {
        switch text {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default:
            let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw InvalidConfigurationValue("must be production, sandbox or PUSHHOST:PORT,MANAGEMENTHOST:PORT, got \"\(text)\"")
            }
            let push = try ConfigurationHostPort(parsing: String(parts[0]))
            let management = try ConfigurationHostPort(parsing: String(parts[1]))
            self = .custom(pushHost: push.host, pushPort: push.port, managementHost: management.host, managementPort: management.port)
        }
    }
}

extension AlertMode {
    /// `text` or `localized`.
    init(configurationText text: String) throws(InvalidConfigurationValue) {
        guard let mode = AlertMode(rawValue: text) else {
            throw InvalidConfigurationValue("must be one of \(AlertMode.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(text)\"")
        }
        self = mode
    }
}

extension LogLevel {
    /// One of the level names, exactly as written in log lines.
    init(configurationText text: String) throws(InvalidConfigurationValue) {
        guard let level = LogLevel(name: text) else {
            let names = LogLevel.allCases.map(\.name)
            throw InvalidConfigurationValue("must be one of \(names.joined(separator: ", ")), got \"\(text)\"")
        }
        self = level
    }
}

/// `KEY=PREFIX[,KEY=PREFIX...]`, spaces around entries ignored. Messages number the entries and
/// never repeat a key.
func parseProviderKeys(_ text: String) throws(InvalidConfigurationValue) -> [GatewayConfiguration.APIKey] {
    var keys: [GatewayConfiguration.APIKey] = []
    let entries = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    for (index, entry) in entries.enumerated() {
        guard let equals = entry.firstIndex(of: "=") else {
            throw InvalidConfigurationValue("must be KEY=PREFIX[,KEY=PREFIX...] (entry \(index + 1) has no '=')")
        }
        keys.append(.init(key: String(entry[..<equals]), scope: .channelPrefix(String(entry[entry.index(after: equals)...]))))
    }
    return keys
}
