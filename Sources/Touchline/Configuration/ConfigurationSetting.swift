/// The table of gateway settings: for each one, its JSON key, environment variable and flag.
///
/// Flag parsing, environment reading, error hints ("set apns.teamID, TOUCHLINE_APNS_TEAM_ID or
/// --apns-team-id") and the `--help` text all come from this one table, so they cannot drift apart.
enum ConfigurationSetting: CaseIterable {
    case config, development, listen, dataDirectory, maxBodyBytes
    case apnsKeyPath, apnsKeyID, apnsTeamID, apnsBundleID, apnsEnvironment, apnsCAFile, apnsBroadcastHost
    case adminKey, apiKeys, defaultPolicy, personalQueue, logLevel, metrics, http, webhooks
    case idempotency, providerRateLimit

    /// The member path in the JSON file; nil for `--config` itself.
    var fileKey: String? {
        switch self {
        case .config: nil
        case .development: "apns.mode"
        case .listen: "listen"
        case .dataDirectory: "dataDirectory"
        case .maxBodyBytes: "maxBodyBytes"
        case .apnsKeyPath: "apns.keyPath"
        case .apnsKeyID: "apns.keyID"
        case .apnsTeamID: "apns.teamID"
        case .apnsBundleID: "apns.bundleID"
        case .apnsEnvironment: "apns.environment"
        case .apnsCAFile: "apns.caFile"
        case .apnsBroadcastHost: "apns.broadcastHost"
        case .adminKey: "apiKeys[].admin"
        case .apiKeys: "apiKeys[].channelPrefix"
        case .defaultPolicy: "defaultPolicy"
        case .personalQueue: "personalQueue"
        case .logLevel: "log.level"
        case .metrics: "metrics"
        case .http: "http"
        case .webhooks: "webhooks"
        case .idempotency: "idempotency"
        case .providerRateLimit: "providerRateLimit"
        }
    }

    var environmentVariable: String {
        switch self {
        case .config: "TOUCHLINE_CONFIG"
        case .development: "TOUCHLINE_DEV"
        case .listen: "TOUCHLINE_LISTEN"
        case .dataDirectory: "TOUCHLINE_DATA_DIR"
        case .maxBodyBytes: "TOUCHLINE_MAX_BODY_BYTES"
        case .apnsKeyPath: "TOUCHLINE_APNS_KEY_PATH"
        case .apnsKeyID: "TOUCHLINE_APNS_KEY_ID"
        case .apnsTeamID: "TOUCHLINE_APNS_TEAM_ID"
        case .apnsBundleID: "TOUCHLINE_APNS_BUNDLE_ID"
        case .apnsEnvironment: "TOUCHLINE_APNS_ENVIRONMENT"
        case .apnsCAFile: "TOUCHLINE_APNS_CA_FILE"
        case .apnsBroadcastHost: "TOUCHLINE_APNS_BROADCAST_HOST"
        case .adminKey: "TOUCHLINE_ADMIN_KEY"
        case .apiKeys: "TOUCHLINE_API_KEYS"
        case .defaultPolicy: "TOUCHLINE_DEFAULT_POLICY"
        case .personalQueue: "TOUCHLINE_PERSONAL_QUEUE"
        case .logLevel: "TOUCHLINE_LOG_LEVEL"
        case .metrics: "TOUCHLINE_METRICS"
        case .http: "TOUCHLINE_HTTP"
        case .webhooks: "TOUCHLINE_WEBHOOKS"
        case .idempotency: "TOUCHLINE_IDEMPOTENCY"
        case .providerRateLimit: "TOUCHLINE_PROVIDER_RATE_LIMIT"
        }
    }

    var flag: String {
        switch self {
        case .config: "--config"
        case .development: "--dev"
        case .listen: "--listen"
        case .dataDirectory: "--data-dir"
        case .maxBodyBytes: "--max-body-bytes"
        case .apnsKeyPath: "--apns-key"
        case .apnsKeyID: "--apns-key-id"
        case .apnsTeamID: "--apns-team-id"
        case .apnsBundleID: "--apns-bundle-id"
        case .apnsEnvironment: "--apns-environment"
        case .apnsCAFile: "--apns-ca-file"
        case .apnsBroadcastHost: "--apns-broadcast-host"
        case .adminKey: "--admin-key"
        case .apiKeys: "--api-key"
        case .defaultPolicy: "--default-policy"
        case .personalQueue: "--personal-queue"
        case .logLevel: "--log-level"
        case .metrics: "--metrics"
        case .http: "--http"
        case .webhooks: "--webhooks"
        case .idempotency: "--idempotency"
        case .providerRateLimit: "--provider-rate-limit"
        }
    }

    /// What the value looks like, for the help text.
    var valueName: String {
        switch self {
        case .config, .apnsKeyPath, .apnsCAFile: "PATH"
        case .development: ""
        case .apnsBroadcastHost: "HOST[:PORT]"
        case .listen: "ADDRESS:PORT"
        case .dataDirectory: "DIR"
        case .maxBodyBytes: "BYTES"
        case .apnsKeyID, .apnsTeamID: "ID"
        case .apnsBundleID: "BUNDLE_ID"
        case .apnsEnvironment: "ENV"
        case .adminKey: "KEY"
        case .apiKeys: "KEY=PREFIX"
        case .defaultPolicy, .personalQueue, .metrics, .http, .webhooks, .idempotency, .providerRateLimit: "JSON"
        case .logLevel: "LEVEL"
        }
    }

    /// The setting in words, as messages name it.
    var title: String {
        switch self {
        case .config: "configuration file"
        case .development: "development mode"
        case .listen: "listen address"
        case .dataDirectory: "data directory"
        case .maxBodyBytes: "maximum body size"
        case .apnsKeyPath: "APNs key path"
        case .apnsKeyID: "APNs key id"
        case .apnsTeamID: "APNs team id"
        case .apnsBundleID: "APNs bundle id"
        case .apnsEnvironment: "APNs environment"
        case .apnsCAFile: "APNs CA file"
        case .apnsBroadcastHost: "APNs broadcast host"
        case .adminKey: "admin API key"
        case .apiKeys: "provider API keys"
        case .defaultPolicy: "default channel policy"
        case .personalQueue: "personal queue settings"
        case .logLevel: "log level"
        case .metrics: "metrics settings"
        case .http: "HTTP settings"
        case .webhooks: "webhook settings"
        case .idempotency: "idempotency settings"
        case .providerRateLimit: "provider rate limit"
        }
    }

    /// One line of help.
    var summary: String {
        switch self {
        case .config: "JSON configuration file (lowest precedence after the defaults)"
        case .development: "development mode: the bundled mock APNs instead of Apple (TOUCHLINE_DEV=1, apns.mode \"mock\"); never in production"
        case .listen: "provider API address, numeric (default 127.0.0.1:8080; port 0 = any free port)"
        case .dataDirectory: "SQLite database and generated files (default ./touchline-data)"
        case .maxBodyBytes: "largest accepted request body (default 1048576)"
        case .apnsKeyPath: "APNs .p8 signing key; the four APNs credentials go together"
        case .apnsKeyID: "10-character key id of that key"
        case .apnsTeamID: "10-character team id"
        case .apnsBundleID: "the app's bundle id, without .push-type.liveactivity"
        case .apnsEnvironment: "production (default), sandbox, or PUSHHOST:PORT,MANAGEMENTHOST:PORT"
        case .apnsCAFile: "trust this CA file for APNs instead of the system bundle"
        case .apnsBroadcastHost: "send broadcasts here instead of the push host (default: the push host, api.push.apple.com)"
        case .adminKey: "API key allowed everything (repeatable)"
        case .apiKeys: "API key allowed channels whose id starts with PREFIX (repeatable; several: K1=P1,K2=P2)"
        case .defaultPolicy: "channel policy for channels without their own, as JSON"
        case .personalQueue: "personal queue: connections, maxInFlight, window, delivery policy..., as JSON"
        case .logLevel: "lowest level logged: debug, info (default), notice, warning or error"
        case .metrics: "/metrics: requireKey (default false), maxChannelLabels (default 200), as JSON"
        case .http: "provider API: maxConnections (1024), maxBufferedBodyBytes, head/body/idle/write timeouts..., as JSON"
        case .webhooks: "webhook endpoints (url, secret, events, name) and retry, dead-letter age, timeout, retention, as JSON"
        case .idempotency: "Idempotency-Key records: keyLifetimeSeconds (default 86400), as JSON"
        case .providerRateLimit: "request limit of provider keys without their own: requestsPerSecond and burst, as JSON (default none)"
        }
    }

    /// "set apns.teamID, TOUCHLINE_APNS_TEAM_ID or --apns-team-id"
    var whereToSet: String {
        let places = [fileKey, environmentVariable, flag].compactMap { $0 }
        return "set " + places.dropLast().joined(separator: ", ") + " or " + places.last!
    }

    static let byFlag: [String: ConfigurationSetting] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.flag, $0) })
}

extension GatewayConfiguration {
    /// The flags `touchline serve` accepts, one per line with its environment variable, for `--help`.
    public static var commandLineHelp: String {
        ConfigurationSetting.allCases.map { setting in
            let usage = setting.valueName.isEmpty ? setting.flag : "\(setting.flag) \(setting.valueName)"
            let padded = usage.count < 34 ? usage + String(repeating: " ", count: 34 - usage.count) : usage + "  "
            return "  \(padded)\(setting.summary) [\(setting.environmentVariable)]"
        }.joined(separator: "\n")
    }
}

extension GatewayConfigurationError {
    /// The closest of `candidates` to a mistyped `name`, for "did you mean" hints: a case-only
    /// difference, or an edit distance of at most 2 on names long enough for that to be telling.
    static func closestName(to name: String, among candidates: [String]) -> String? {
        if let sameLetters = candidates.first(where: { $0.lowercased() == name.lowercased() }) { return sameLetters }
        let scored = candidates.map { ($0, editDistance(Array(name.lowercased().utf8), Array($0.lowercased().utf8))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2, best.1 * 3 <= name.utf8.count else { return nil }
        return best.0
    }
}

/// Levenshtein distance, one row at a time.
private func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
    var previous = Array(0...b.count)
    for (i, x) in a.enumerated() {
        var current = [i + 1]
        for (j, y) in b.enumerated() {
            current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
        }
        previous = current
    }
    return previous[b.count]
}
