import APNs
import CommandLineOptions
import TouchlineCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension GatewayConfiguration {
    /// The configuration of `touchline serve`, from (later wins) the defaults, the JSON file named
    /// by `--config` or `TOUCHLINE_CONFIG`, `TOUCHLINE_*` environment variables and `arguments`
    /// (the flags after `serve`), checked with ``validate(readFile:)``.
    ///
    /// Every problem is reported at once, each naming where the value was set. Empty environment
    /// variables count as unset; other `TOUCHLINE_*` variables are ignored. See
    /// docs/configuration.md for every setting.
    ///
    /// - Parameter readFile: reads the configuration, key and CA files (injected by tests).
    public static func load(arguments: [String], environment: [String: String],
                            readFile: (String) throws -> [UInt8] = GatewayConfiguration.readWholeFile) throws(GatewayConfigurationError) -> GatewayConfiguration {
        try resolve(arguments: arguments, environment: environment, readFile: readFile).configuration
    }

    /// ``load(arguments:environment:readFile:)`` with where each value came from, for
    /// `touchline serve --check-config`. Flags are read with the options of
    /// ``commandLineOptions``; a flag that is not a setting is a problem like any other.
    public static func resolve(arguments: [String], environment: [String: String],
                               readFile: (String) throws -> [UInt8] = GatewayConfiguration.readWholeFile) throws(GatewayConfigurationError) -> ResolvedConfiguration {
        let settingsOnly = CommandDeclaration(name: "serve", groups: [OptionGroup(nil, commandLineOptions)])
        let (parsed, errors) = CommandLineParser.parseReportingAll(arguments, command: settingsOnly)
        var problems = errors.map(problem(for:))
        if parsed.helpRequested { problems.append(.init("unknown flag --help: the flags here are settings")) }
        return try resolve(flags: parsed.occurrences, environment: environment, readFile: readFile, problems: problems)
    }

    /// The configuration from flags `touchline serve` has already parsed with a declaration that
    /// includes ``commandLineOptions`` (its own options, such as `--check-config`, are skipped),
    /// resolved and checked exactly as ``load(arguments:environment:readFile:)`` does.
    public static func resolve(commandLine: ParsedArguments, environment: [String: String],
                               readFile: (String) throws -> [UInt8] = GatewayConfiguration.readWholeFile) throws(GatewayConfigurationError) -> ResolvedConfiguration {
        try resolve(flags: commandLine.occurrences, environment: environment, readFile: readFile, problems: [])
    }

    private static func resolve(flags occurrences: [OptionOccurrence], environment: [String: String], readFile: (String) throws -> [UInt8],
                                problems flagProblems: [GatewayConfigurationError.Problem]) throws(GatewayConfigurationError) -> ResolvedConfiguration {
        var problems = flagProblems
        let flags = commandLineLayer(occurrences, problems: &problems)
        let variables = environmentLayer(environment, problems: &problems)
        var merged = ConfigurationLayer()
        if let configPath = flags.configPath ?? variables.configPath {
            do {
                merged = try ConfigurationFile.layer(path: configPath.value, bytes: try readFile(configPath.value))
            } catch let error as GatewayConfigurationError {
                problems += error.problems
            } catch {
                problems.append(.init("cannot read configuration file \(configPath.value): \(error)", source: configPath.source))
            }
        }
        guard problems.isEmpty else { throw GatewayConfigurationError(problems: problems) }
        merged.overlay(variables)
        merged.overlay(flags)
        let (configuration, origins, credentialProblems) = resolve(merged)
        // Validation runs even when the credentials are incomplete, so all problems show at once.
        problems = credentialProblems
        do {
            try configuration.validate(origins: origins, readFile: readFile)
        } catch {
            problems += error.problems
        }
        guard problems.isEmpty else { throw GatewayConfigurationError(problems: problems) }
        var loaded = configuration
        var report = ConfigurationReport(configuration: configuration, origins: origins)
        loaded.storeFaultFile = environment["TOUCHLINE_STORE_FAULT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        loaded.idempotency.exitAfterCommit = environment["TOUCHLINE_IDEMPOTENCY_EXIT_AFTER_COMMIT"] == "1"
        if let file = loaded.storeFaultFile {
            report.entries.append(.init(name: "test hook: store fault file", value: file, source: "environment variable TOUCHLINE_STORE_FAULT_FILE"))
        }
        if loaded.idempotency.exitAfterCommit {
            report.entries.append(.init(name: "test hook: exit after idempotency commit", value: "on",
                                        source: "environment variable TOUCHLINE_IDEMPOTENCY_EXIT_AFTER_COMMIT"))
        }
        return ResolvedConfiguration(configuration: loaded, report: report)
    }

    /// A command-line mistake as a configuration problem, in the words the configuration uses for flags.
    private static func problem(for error: UsageError) -> GatewayConfigurationError.Problem {
        switch error.kind {
        case .unknownOption(let name, let suggestion):
            .init("unknown flag \(name)" + (suggestion.map { " (did you mean \($0)?)" } ?? ""))
        case .missingValue(let option, let valueName):
            .init("flag \(option) needs a value: \(option) \(valueName)")
        case .unexpectedArgument(let argument):
            .init("unexpected argument '\(argument)': settings are given as --flag VALUE")
        default:
            .init(error.description)
        }
    }

    /// The flags that are settings, each read into the flags' layer (`--admin-key` and
    /// `--api-key` accumulate; for the others the last one wins).
    private static func commandLineLayer(_ occurrences: [OptionOccurrence], problems: inout [GatewayConfigurationError.Problem]) -> ConfigurationLayer {
        var layer = ConfigurationLayer()
        for occurrence in occurrences {
            guard let setting = ConfigurationSetting.byFlag(occurrence.option.name), let value = occurrence.value else { continue }
            layer.set(setting, text: value, source: .flag(occurrence.spelling), problems: &problems)
        }
        return layer
    }

    private static func environmentLayer(_ environment: [String: String], problems: inout [GatewayConfigurationError.Problem]) -> ConfigurationLayer {
        var layer = ConfigurationLayer()
        for setting in ConfigurationSetting.all {
            guard let text = environment[setting.environmentVariable], !text.isEmpty else { continue }
            layer.set(setting, text: text, source: .environment(setting.environmentVariable), problems: &problems)
        }
        return layer
    }

    /// The merged layer as a configuration, where each value came from, and the problems with the
    /// APNs credentials: all four or none (without all four, `apns` stays nil).
    private static func resolve(_ layer: ConfigurationLayer) -> (GatewayConfiguration, ConfigurationOrigins, [GatewayConfigurationError.Problem]) {
        var configuration = GatewayConfiguration()
        var origins = ConfigurationOrigins()
        func note<Value>(_ value: SourcedSetting<Value>?, _ setting: ConfigurationSetting, _ apply: (Value) -> Void) {
            guard let value else { return }
            apply(value.value)
            origins.settings[setting] = value.source
        }
        note(layer.configPath, .config) { origins.configPath = $0 }
        note(layer.listen, .listen) { configuration.listenHost = $0.host; configuration.listenPort = $0.port }
        note(layer.dataDirectory, .dataDirectory) { configuration.dataDirectory = $0 }
        note(layer.maxBodyBytes, .maxBodyBytes) { configuration.maxBodyBytes = $0 }
        note(layer.defaultPolicy, .defaultPolicy) { configuration.defaultPolicy = $0 }
        note(layer.personalQueue, .personalQueue) { configuration.personalQueue = $0 }
        note(layer.logLevel, .logLevel) { configuration.logLevel = $0 }
        note(layer.metrics, .metrics) { configuration.metrics = $0 }
        note(layer.http, .http) { configuration.http = $0 }
        note(layer.development, .development) { configuration.apnsMode = $0 ? .mock : .apple }
        note(layer.webhooks, .webhooks) { configuration.webhooks = $0 }
        note(layer.idempotency, .idempotency) { configuration.idempotency = $0 }
        note(layer.providerRateLimit, .providerRateLimit) { configuration.providerRateLimit = $0 }
        note(layer.keyLimits, .keyLimits) { configuration.keyLimits = $0 }
        note(layer.store, .store) { configuration.store = $0 }
        note(layer.alertMode, .alertMode) { configuration.alertMode = $0 }
        note(layer.tokenRenewalMargin, .apnsTokenRenewalMargin) { configuration.apnsTokenRenewalMargin = $0 }
        note(layer.recordings, .recordings) { configuration.recordings = $0 }
        configuration.apps = (layer.apps ?? []).map(\.value)
        origins.apps = (layer.apps ?? []).map(\.source)
        let keys = (layer.adminKeys ?? []) + (layer.providerKeys ?? [])
        configuration.apiKeys = keys.map(\.value)
        origins.apiKeys = keys.map(\.source)

        let credentials: [(ConfigurationSetting, String, SourcedSetting<String>?)] = [
            (.apnsKeyPath, "key path", layer.keyPath), (.apnsKeyID, "key id", layer.keyID),
            (.apnsTeamID, "team id", layer.teamID), (.apnsBundleID, "bundle id", layer.bundleID),
        ]
        var problems: [GatewayConfigurationError.Problem] = []
        let endpointSettings = [(ConfigurationSetting.apnsEnvironment, layer.environment?.source), (.apnsCAFile, layer.caFile?.source),
                                (.apnsBroadcastHost, layer.broadcastHost?.source)]
        if configuration.apnsMode == .mock, let development = layer.development {
            // Development mode and Apple's settings together: which one was meant is not ours to guess.
            for (setting, source) in credentials.map({ ($0.0, $0.2?.source) }) + endpointSettings {
                guard let source else { continue }
                problems.append(.init("\(setting.title) is set but development mode (\(development.source)) sends to the bundled mock APNs: "
                                      + "remove one of them", source: source))
            }
            return (configuration, origins, problems)
        }
        if credentials.allSatisfy({ $0.2 == nil }) {
            let unused = endpointSettings.compactMap { setting, source in source.map { (setting, $0) } }
            for (setting, source) in unused {
                problems.append(.init("\(setting.title) is set but there are no APNs credentials: give the key path, key id, team id and bundle id", source: source))
            }
            if unused.isEmpty { problems.append(.init(Self.missingCredentials)) }
        } else {
            for (setting, name, value) in credentials where value == nil {
                problems.append(.init("APNs credentials incomplete: missing \(name) (\(setting.whereToSet))"))
            }
        }
        if let keyPath = layer.keyPath, let keyID = layer.keyID, let teamID = layer.teamID, let bundleID = layer.bundleID {
            configuration.apns = APNsSettings(keyPath: keyPath.value, keyID: keyID.value, teamID: teamID.value, bundleID: bundleID.value,
                                              environment: layer.environment?.value ?? .production, caFile: layer.caFile?.value,
                                              broadcastHost: layer.broadcastHost?.value)
            for (setting, _, value) in credentials { origins.settings[setting] = value?.source }
            origins.settings[.apnsEnvironment] = layer.environment?.source
            origins.settings[.apnsCAFile] = layer.caFile?.source
            origins.settings[.apnsBroadcastHost] = layer.broadcastHost?.source
        }
        return (configuration, origins, problems)
    }

    /// The one line a gateway without Apple credentials stops with: what is missing, and how to
    /// ask for development mode instead.
    package static let missingCredentials = "no APNs credentials: give apns.keyPath, apns.keyID, apns.teamID and apns.bundleID "
        + "(TOUCHLINE_APNS_KEY_PATH, _KEY_ID, _TEAM_ID, _BUNDLE_ID or --apns-key, --apns-key-id, --apns-team-id, --apns-bundle-id), "
        + "or run development mode with the bundled mock APNs: --dev, TOUCHLINE_DEV=1 or \"apns\": {\"mode\": \"mock\"}"

    /// The whole file at `path` (at most 16 MiB), failing with the system's reason.
    public static func readWholeFile(_ path: String) throws -> [UInt8] {
        let limit = 16 << 20
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileReadError(errno: errno) }
        defer { close(descriptor) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw FileReadError(errno: errno) }
            if count == 0 { return contents }
            contents += chunk[..<count]
            guard contents.count <= limit else { throw FileReadError(description: "larger than \(limit) bytes") }
        }
    }
}

/// Why a file could not be read, in the system's words ("No such file or directory").
private struct FileReadError: Error, CustomStringConvertible {
    var description: String

    init(description: String) { self.description = description }
    init(errno code: Int32) { description = String(cString: strerror(code)) }
}

/// Where each setting of a loaded configuration came from, for validation messages.
struct ConfigurationOrigins {
    var settings: [ConfigurationSetting: ConfigurationSource] = [:]
    /// The configuration file read, if any.
    var configPath: String?
    /// Parallel to `GatewayConfiguration.apiKeys`; empty for a configuration built in code.
    var apiKeys: [ConfigurationSource] = []
    /// Parallel to `GatewayConfiguration.apps` (each entry of the file's `apps`).
    var apps: [ConfigurationSource] = []

    subscript(setting: ConfigurationSetting) -> ConfigurationSource? { settings[setting] }

    func apiKey(_ index: Int) -> ConfigurationSource? { apiKeys.indices.contains(index) ? apiKeys[index] : nil }

    func app(_ index: Int) -> ConfigurationSource? { apps.indices.contains(index) ? apps[index] : nil }
}

extension ConfigurationLayer {
    /// `set(_:text:source:)`, recording a failure as a problem naming the setting and its source.
    mutating func set(_ setting: ConfigurationSetting, text: String, source: ConfigurationSource,
                      problems: inout [GatewayConfigurationError.Problem]) {
        do {
            try set(setting, text: text, source: source)
        } catch {
            problems.append(.init("\(setting.title) \(error.predicate)", source: source))
        }
    }
}
