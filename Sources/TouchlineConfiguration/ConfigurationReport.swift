import TouchlineCore

/// A configuration as `touchline serve` would run it, with where each value came from.
public struct ResolvedConfiguration: Sendable {
    public var configuration: GatewayConfiguration
    /// Every setting with its value and source, secrets redacted: what `--check-config` prints.
    public var report: ConfigurationReport
}

/// Every setting of a resolved configuration, one line each: its name, its value and where the
/// value came from (the default, a file member, an environment variable or a flag).
///
/// Printed by `touchline serve --check-config`, often into a deploy log or a ticket, so nothing
/// secret is in it: API keys and webhook secrets show as `<redacted>`; key *paths* show, since
/// knowing which file is read is the point.
public struct ConfigurationReport: Sendable, Equatable, CustomStringConvertible {
    public struct Entry: Sendable, Equatable {
        /// The setting as the file names it (`apns.teamID`), or its flag when there is no file key.
        public var name: String
        public var value: String
        /// `default`, `flag --listen`, `environment variable TOUCHLINE_LISTEN`, `listen in /etc/touchline/touchline.json`.
        public var source: String

        public init(name: String, value: String, source: String) {
            self.name = name
            self.value = value
            self.source = source
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// Three aligned columns; a long value pushes its source further right rather than onto another line.
    public var description: String {
        let nameWidth = entries.map(\.name.count).max() ?? 0
        let valueWidth = min(entries.map(\.value.count).max() ?? 0, 40)
        return entries.map { entry in
            let name = entry.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            let value = entry.value.count < valueWidth ? entry.value.padding(toLength: valueWidth, withPad: " ", startingAt: 0) : entry.value
            return "\(name)  \(value)  (\(entry.source))"
        }.joined(separator: "\n")
    }

    /// The report of `configuration`, whose values came from `origins`.
    init(configuration: GatewayConfiguration, origins: ConfigurationOrigins) {
        var entries: [Entry] = []
        let apnsSettings: Set<ConfigurationSetting> = [.apnsKeyPath, .apnsKeyID, .apnsTeamID, .apnsBundleID, .apnsEnvironment,
                                                        .apnsCAFile, .apnsBroadcastHost]
        for setting in ConfigurationSetting.all {
            let name = setting.fileKey ?? setting.flag
            let source = origins[setting]?.description ?? "default"
            switch setting {
            case .adminKey, .apiKeys:
                continue
            case .config:
                entries.append(Entry(name: name, value: origins.configPath ?? "none", source: source))
            case _ where apnsSettings.contains(setting) && configuration.apnsMode == .mock:
                entries.append(Entry(name: name, value: "not used in development mode", source: source))
            case _ where setting.isSecret:
                entries.append(Entry(name: name, value: ConfigurationValueText.redacted, source: source))
            default:
                entries.append(Entry(name: name, value: setting.show(configuration) ?? "none", source: source))
            }
        }
        for (index, key) in configuration.apiKeys.enumerated() {
            let scope = switch key.scope {
            case .admin: "admin"
            case .channelPrefix(let prefix) where key.app == AppChannelID.defaultApp: "channels \(prefix)*"
            case .channelPrefix(let prefix): "app \(key.app), channels \(prefix)*"
            }
            let limit = key.rateLimit.map { ", rate limit \(ConfigurationValueText.fields(of: $0))" } ?? ""
            let own = key.limits.map { ", limits \(ConfigurationValueText.fields(of: $0))" } ?? ""
            let topics = key.followTopics.isEmpty ? "" : ", follow topics \(ConfigurationValueText.fields(of: key.followTopics))"
            entries.append(Entry(name: "apiKeys[\(index)]", value: "\(scope), key \(ConfigurationValueText.redacted)\(limit)\(own)\(topics)",
                                 source: origins.apiKey(index)?.description ?? "default"))
        }
        for (index, app) in configuration.apps.enumerated() {
            let apns = app.apns
            entries.append(Entry(name: "apps[\(index)]", value: "\(app.name): bundle \(apns.bundleID), team \(apns.teamID), key \(apns.keyID) "
                                 + "(\(apns.keyPath)), \(ConfigurationValueText.environment(apns.environment))",
                                 source: origins.app(index)?.description ?? "default"))
        }
        if configuration.apiKeys.isEmpty {
            let value = configuration.apnsMode == .mock ? "none: an admin key is generated and printed at start (development mode)" : "none"
            entries.append(Entry(name: "apiKeys", value: value, source: "default"))
        }
        self.entries = entries
    }
}
