import APNs
import TouchlineCore

/// A value with the place it was set.
struct Sourced<Value> {
    var value: Value
    var source: ConfigurationSource
}

/// What one source (the file, the environment or the flags) sets; nil = not set there.
///
/// Layers are stacked with `overlay`: each setting of the later layer replaces the earlier one.
/// API keys are two settings, admin keys and provider keys, each replaced as a whole list, so a
/// later source can take every key of one kind away from an earlier one.
struct ConfigurationLayer {
    var configPath: Sourced<String>?
    var listen: Sourced<HostAndPort>?
    var dataDirectory: Sourced<String>?
    var maxBodyBytes: Sourced<Int>?
    var keyPath: Sourced<String>?
    var keyID: Sourced<String>?
    var teamID: Sourced<String>?
    var bundleID: Sourced<String>?
    var environment: Sourced<APNsEnvironment>?
    var caFile: Sourced<String>?
    var adminKeys: [Sourced<String>]?
    var providerKeys: [Sourced<GatewayConfiguration.APIKey>]?
    var defaultPolicy: Sourced<ChannelPolicy>?

    mutating func overlay(_ later: ConfigurationLayer) {
        configPath = later.configPath ?? configPath
        listen = later.listen ?? listen
        dataDirectory = later.dataDirectory ?? dataDirectory
        maxBodyBytes = later.maxBodyBytes ?? maxBodyBytes
        keyPath = later.keyPath ?? keyPath
        keyID = later.keyID ?? keyID
        teamID = later.teamID ?? teamID
        bundleID = later.bundleID ?? bundleID
        environment = later.environment ?? environment
        caFile = later.caFile ?? caFile
        adminKeys = later.adminKeys ?? adminKeys
        providerKeys = later.providerKeys ?? providerKeys
        defaultPolicy = later.defaultPolicy ?? defaultPolicy
    }

    /// Sets `setting` from the text of an environment variable or flag. Admin and provider keys
    /// accumulate within the layer (repeated flags); everything else is last-one-wins.
    mutating func set(_ setting: ConfigurationSetting, text: String, source: ConfigurationSource) throws(InvalidValue) {
        switch setting {
        case .config: configPath = Sourced(value: text, source: source)
        case .listen: listen = Sourced(value: try HostAndPort(parsing: text), source: source)
        case .dataDirectory: dataDirectory = Sourced(value: text, source: source)
        case .maxBodyBytes: maxBodyBytes = Sourced(value: try parseByteCount(text), source: source)
        case .apnsKeyPath: keyPath = Sourced(value: text, source: source)
        case .apnsKeyID: keyID = Sourced(value: text, source: source)
        case .apnsTeamID: teamID = Sourced(value: text, source: source)
        case .apnsBundleID: bundleID = Sourced(value: text, source: source)
        case .apnsEnvironment: environment = Sourced(value: try parseAPNsEnvironment(text), source: source)
        case .apnsCAFile: caFile = Sourced(value: text, source: source)
        case .adminKey: adminKeys = (adminKeys ?? []) + [Sourced(value: text, source: source)]
        case .apiKeys: providerKeys = (providerKeys ?? []) + (try parseProviderKeys(text)).map { Sourced(value: $0, source: source) }
        case .defaultPolicy:
            let json: JSONValue
            do {
                json = try JSONParser.parse(Array(text.utf8))
            } catch {
                throw InvalidValue("is not valid JSON: \(error)")
            }
            defaultPolicy = Sourced(value: try decodeChannelPolicy(json), source: source)
        }
    }
}

/// A value that cannot be understood. The message is a predicate ("must be HOST:PORT, got
/// \"x\""); the caller puts the setting's name in front and adds where it came from.
struct InvalidValue: Error {
    var predicate: String
    init(_ predicate: String) { self.predicate = predicate }
}

/// `address:port`, with IPv6 addresses in brackets (`[::1]:8080`).
struct HostAndPort: Equatable {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init(parsing text: String) throws(InvalidValue) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw InvalidValue("must be [IPV6]:PORT, got \"\(text)\"") }
            portPart = rest.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard !hostPart.contains(":") else { throw InvalidValue("must have an IPv6 address in brackets, as in [::1]:8080, got \"\(text)\"") }
        } else {
            throw InvalidValue("must be HOST:PORT, got \"\(text)\"")
        }
        guard !hostPart.isEmpty else { throw InvalidValue("has no host before the port in \"\(text)\"") }
        guard !portPart.isEmpty, portPart.count <= 5, portPart.utf8.allSatisfy({ (48...57).contains($0) }), let port = Int(portPart) else {
            throw InvalidValue("has no valid port number after the colon in \"\(text)\"")
        }
        self.init(host: String(hostPart), port: port)
    }
}

/// A positive decimal count of bytes.
func parseByteCount(_ text: String) throws(InvalidValue) -> Int {
    guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text) else {
        throw InvalidValue("must be a whole number of bytes, got \"\(text)\"")
    }
    return value
}

/// `production`, `sandbox`, or `PUSHHOST:PORT,MANAGEMENTHOST:PORT` for any other server.
func parseAPNsEnvironment(_ text: String) throws(InvalidValue) -> APNsEnvironment {
    switch text {
    case "production": return .production
    case "sandbox": return .sandbox
    default:
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw InvalidValue("must be production, sandbox or PUSHHOST:PORT,MANAGEMENTHOST:PORT, got \"\(text)\"")
        }
        let push = try HostAndPort(parsing: String(parts[0]))
        let management = try HostAndPort(parsing: String(parts[1]))
        return .custom(pushHost: push.host, pushPort: push.port, managementHost: management.host, managementPort: management.port)
    }
}

/// `KEY=PREFIX[,KEY=PREFIX...]`. Messages number the entries and never repeat a key.
func parseProviderKeys(_ text: String) throws(InvalidValue) -> [GatewayConfiguration.APIKey] {
    var keys: [GatewayConfiguration.APIKey] = []
    for (index, entry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
        guard let equals = entry.firstIndex(of: "=") else {
            throw InvalidValue("must be KEY=PREFIX[,KEY=PREFIX...] (entry \(index + 1) has no '=')")
        }
        keys.append(.init(key: String(entry[..<equals]), scope: .channelPrefix(String(entry[entry.index(after: equals)...]))))
    }
    return keys
}
