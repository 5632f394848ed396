import APNs
import Foundation
import TouchlineCore
import TouchlineRuntime

/// Reads the JSON configuration file (`--config`) into a layer, checking every member.
///
/// Strict on purpose: an unknown member is refused with its path and the closest known name,
/// because a misspelt `apns.teamId` silently ignored would surface much later as "missing team
/// id". `null` counts as absent. Relative paths in the file are relative to the file's directory,
/// so a configuration directory can be moved as a whole.
struct ConfigurationFile {
    private let path: String
    private var layer = ConfigurationLayer()
    private var problems: [GatewayConfigurationError.Problem] = []

    private init(path: String) { self.path = path }

    /// The settings in `bytes`, the contents of the file at `path`; all problems at once.
    static func layer(path: String, bytes: [UInt8]) throws(GatewayConfigurationError) -> ConfigurationLayer {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            let (line, column) = lineAndColumn(of: error.offset, in: bytes)
            throw GatewayConfigurationError(problems: [.init(
                "configuration file \(path) is not valid JSON: \(error.message) at byte \(error.offset) (line \(line), column \(column))")])
        }
        var file = ConfigurationFile(path: path)
        file.read(root)
        guard file.problems.isEmpty else { throw GatewayConfigurationError(problems: file.problems) }
        return file.layer
    }

    private mutating func read(_ root: JSONValue) {
        guard let members = object(root, at: nil, allowed: ["listen", "dataDirectory", "maxBodyBytes", "apns", "apiKeys", "defaultPolicy",
                                                          "personalQueue", "log", "metrics", "http", "webhooks", "idempotency",
                                                          "providerRateLimit", "store", "alerts", "apps",
                                                          "recordings", "keyLimits"]) else {
            return
        }
        layer.listen = members["listen"].flatMap { convert($0, at: "listen") { value throws(InvalidConfigurationValue) in
            try ConfigurationHostPort(parsing: try text(value))
        } }
        layer.dataDirectory = members["dataDirectory"].flatMap { convertPath($0, at: "dataDirectory") }
        layer.maxBodyBytes = members["maxBodyBytes"].flatMap { convert($0, at: "maxBodyBytes", integer) }
        if let apns = members["apns"] { readAPNs(apns) }
        if let apps = members["apps"] { readApps(apps) }
        if let log = members["log"], let logMembers = object(log, at: "log", allowed: ["level"]) {
            layer.logLevel = logMembers["level"].flatMap { convert($0, at: "log.level") { value throws(InvalidConfigurationValue) in
                try LogLevel(configurationText: try text(value))
            } }
        }
        if let alerts = members["alerts"], let alertMembers = object(alerts, at: "alerts", allowed: ["mode"]) {
            layer.alertMode = alertMembers["mode"].flatMap { convert($0, at: "alerts.mode") { value throws(InvalidConfigurationValue) in
                try AlertMode(configurationText: try text(value))
            } }
        }
        if let keys = members["apiKeys"] { readAPIKeys(keys) }
        layer.defaultPolicy = members["defaultPolicy"].flatMap { convert($0, at: "defaultPolicy") { value throws(InvalidConfigurationValue) in
            try ChannelPolicy(configured: value)
        } }
        layer.personalQueue = members["personalQueue"].flatMap { convert($0, at: "personalQueue") { value throws(InvalidConfigurationValue) in
            try PersonalQueueSettings(json: value)
        } }
        layer.metrics = members["metrics"].flatMap { convert($0, at: "metrics") { value throws(InvalidConfigurationValue) in
            try MetricsSettings(json: value)
        } }
        layer.http = members["http"].flatMap { convert($0, at: "http") { value throws(InvalidConfigurationValue) in
            try HTTPConnectionLimits(json: value)
        } }
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }
        layer.webhooks = members["webhooks"].flatMap { convert($0, at: "webhooks") { value throws(InvalidConfigurationValue) in
            try WebhookSettings(json: value, pathsRelativeTo: directory)
        } }
        layer.idempotency = members["idempotency"].flatMap { convert($0, at: "idempotency") { value throws(InvalidConfigurationValue) in
            try IdempotencySettings(json: value)
        } }
        layer.providerRateLimit = members["providerRateLimit"].flatMap { convert($0, at: "providerRateLimit") { value throws(InvalidConfigurationValue) in
            try KeyRateLimit(json: value)
        } }
        layer.recordings = members["recordings"].flatMap { convert($0, at: "recordings") { value throws(InvalidConfigurationValue) in
            try RecordingLimits(json: value)
        } }
        layer.store = members["store"].flatMap { convert($0, at: "store") { value throws(InvalidConfigurationValue) in
            try StoreSettings(json: value, defaultInstance: StoreSettings.hostInstance)
        } }
        layer.keyLimits = members["keyLimits"].flatMap { convert($0, at: "keyLimits") { value throws(InvalidConfigurationValue) in
            try KeyLimits(json: value)
        } }
    }

    private mutating func readAPNs(_ value: JSONValue) {
        guard let members = object(value, at: "apns", allowed: ["mode", "keyPath", "keyID", "teamID", "bundleID", "environment", "caFile",
                                                               "broadcastHost", "tokenRenewalMarginSeconds"]) else {
            return
        }
        layer.development = members["mode"].flatMap { convert($0, at: "apns.mode") { value throws(InvalidConfigurationValue) in
            switch try text(value) {
            case "mock": return true
            case "apple": return false
            case let other: throw InvalidConfigurationValue("must be \"apple\" or \"mock\", got \"\(other)\"")
            }
        } }
        layer.broadcastHost = members["broadcastHost"].flatMap { convert($0, at: "apns.broadcastHost") { value throws(InvalidConfigurationValue) in
            try parseBroadcastHost(try text(value))
        } }
        layer.keyPath = members["keyPath"].flatMap { convertPath($0, at: "apns.keyPath") }
        layer.keyID = members["keyID"].flatMap { convert($0, at: "apns.keyID", text) }
        layer.teamID = members["teamID"].flatMap { convert($0, at: "apns.teamID", text) }
        layer.bundleID = members["bundleID"].flatMap { convert($0, at: "apns.bundleID", text) }
        layer.caFile = members["caFile"].flatMap { convertPath($0, at: "apns.caFile") }
        layer.tokenRenewalMargin = members["tokenRenewalMarginSeconds"].flatMap { convert($0, at: "apns.tokenRenewalMarginSeconds") {
            value throws(InvalidConfigurationValue) in .seconds(try integer(value))
        } }
        layer.environment = members["environment"].flatMap { readEnvironment($0, at: "apns.environment") }
    }

    /// `production`, `sandbox`, or an object naming the push and management servers.
    private mutating func readEnvironment(_ environment: JSONValue, at keyPath: String) -> SourcedSetting<APNsEnvironment>? {
        if case .string = environment {
            return convert(environment, at: keyPath) { value throws(InvalidConfigurationValue) in
                try APNsEnvironment(configurationText: try text(value))
            }
        }
        let servers = ["pushHost", "pushPort", "managementHost", "managementPort"]
        guard let members = object(environment, at: keyPath, allowed: servers, expected: "\"production\", \"sandbox\" or an object") else {
            return nil
        }
        for name in servers where members[name] == nil {
            problems.append(.init("\(keyPath) needs \(name): give all of \(servers.joined(separator: ", "))", source: source(keyPath)))
        }
        guard let pushHost = members["pushHost"].flatMap({ convert($0, at: "\(keyPath).pushHost", text) }),
              let pushPort = members["pushPort"].flatMap({ convert($0, at: "\(keyPath).pushPort", integer) }),
              let managementHost = members["managementHost"].flatMap({ convert($0, at: "\(keyPath).managementHost", text) }),
              let managementPort = members["managementPort"].flatMap({ convert($0, at: "\(keyPath).managementPort", integer) })
        else { return nil }
        return SourcedSetting(value: .custom(pushHost: pushHost.value, pushPort: pushPort.value,
                                             managementHost: managementHost.value, managementPort: managementPort.value),
                              source: source(keyPath))
    }

    /// `apps`: further apps, each an object with a name and the members of the `apns` block
    /// (without `mode`), plus its own `defaultPolicy`. Checked further by the validation.
    private mutating func readApps(_ value: JSONValue) {
        guard case .array(let entries) = value else {
            problems.append(.init("apps must be an array (got \(kind(of: value)))", source: source("apps")))
            return
        }
        var apps: [SourcedSetting<GatewayConfiguration.App>] = []
        for (index, entry) in entries.enumerated() {
            let at = "apps[\(index)]"
            guard let members = object(entry, at: at, allowed: ["name", "keyPath", "keyID", "teamID", "bundleID", "environment", "caFile",
                                                                "broadcastHost", "defaultPolicy", "personalQueue"]) else { continue }
            let name = members["name"].flatMap { convert($0, at: "\(at).name", text) }
            let keyPath = members["keyPath"].flatMap { convertPath($0, at: "\(at).keyPath") }
            let keyID = members["keyID"].flatMap { convert($0, at: "\(at).keyID", text) }
            let teamID = members["teamID"].flatMap { convert($0, at: "\(at).teamID", text) }
            let bundleID = members["bundleID"].flatMap { convert($0, at: "\(at).bundleID", text) }
            let environment = members["environment"].flatMap { readEnvironment($0, at: "\(at).environment") }
            let caFile = members["caFile"].flatMap { convertPath($0, at: "\(at).caFile") }
            let broadcastHost = members["broadcastHost"].flatMap { convert($0, at: "\(at).broadcastHost") { value throws(InvalidConfigurationValue) in
                try parseBroadcastHost(try text(value))
            } }
            let policy = members["defaultPolicy"].flatMap { convert($0, at: "\(at).defaultPolicy") { value throws(InvalidConfigurationValue) in
                try ChannelPolicy(configured: value)
            } }
            let personalQueue = members["personalQueue"].flatMap { convert($0, at: "\(at).personalQueue") { value throws(InvalidConfigurationValue) in
                try AppPersonalQueueLimits(json: value)
            } }
            let required: [(String, SourcedSetting<String>?)] = [("name", name), ("keyPath", keyPath), ("keyID", keyID), ("teamID", teamID),
                                                                 ("bundleID", bundleID)]
            let missing = required.filter { name, value in value == nil && members[name] == nil }.map(\.0)
            if !missing.isEmpty {
                problems.append(.init("\(at) needs \(missing.joined(separator: ", ")) (an app has a name and the APNs credentials of the apns block)",
                                      source: source(at)))
            }
            guard let name, let keyPath, let keyID, let teamID, let bundleID else { continue }
            let settings = GatewayConfiguration.APNsSettings(keyPath: keyPath.value, keyID: keyID.value, teamID: teamID.value, bundleID: bundleID.value,
                                                             environment: environment?.value ?? .production, caFile: caFile?.value,
                                                             broadcastHost: broadcastHost?.value)
            apps.append(SourcedSetting(value: .init(name: name.value, apns: settings, defaultPolicy: policy?.value,
                                                    personalQueue: personalQueue?.value ?? AppPersonalQueueLimits()), source: source(at)))
        }
        layer.apps = apps
    }

    private mutating func readAPIKeys(_ value: JSONValue) {
        guard case .array(let entries) = value else {
            problems.append(.init("apiKeys must be an array (got \(kind(of: value)))", source: source("apiKeys")))
            return
        }
        var adminKeys: [SourcedSetting<GatewayConfiguration.APIKey>] = []
        var providerKeys: [SourcedSetting<GatewayConfiguration.APIKey>] = []
        for (index, entry) in entries.enumerated() {
            let keyPath = "apiKeys[\(index)]"
            guard let members = object(entry, at: keyPath, allowed: ["key", "channelPrefix", "admin", "rateLimit", "app",
                                                                                "limits", "followTopics"]) else { continue }
            guard let key = members["key"].map({ convert($0, at: keyPath + ".key", text) }) else {
                problems.append(.init("\(keyPath) has no key", source: source(keyPath)))
                continue
            }
            let prefix = members["channelPrefix"].flatMap { convert($0, at: keyPath + ".channelPrefix", text) }
            let admin = members["admin"].flatMap { convert($0, at: keyPath + ".admin", boolean) }
            let app = members["app"].flatMap { convert($0, at: keyPath + ".app", text) }
            let rateLimit = members["rateLimit"].flatMap { convert($0, at: keyPath + ".rateLimit") { value throws(InvalidConfigurationValue) in
                try KeyRateLimit(json: value)
            } }
            let limits = members["limits"].flatMap { convert($0, at: keyPath + ".limits") { value throws(InvalidConfigurationValue) in
                try KeyLimits.Override(json: value)
            } }
            let followTopics = members["followTopics"].flatMap { convert($0, at: keyPath + ".followTopics") { value throws(InvalidConfigurationValue) in
                try FollowTopicGrants.topics(json: value)
            } }
            guard let key else { continue }
            if admin?.value == true, followTopics != nil {
                problems.append(.init("\(keyPath) has both \"admin\": true and followTopics; an admin key may address every topic", source: source(keyPath)))
            }
            switch (admin?.value ?? false, prefix) {
            case (true, nil):
                if app != nil {
                    problems.append(.init("\(keyPath) has both \"admin\": true and an app; an admin key serves every app", source: source(keyPath)))
                }
                adminKeys.append(SourcedSetting(value: .init(key: key.value, scope: .admin, rateLimit: rateLimit?.value, limits: limits?.value),
                                                source: source(keyPath)))
            case (false, let prefix?):
                providerKeys.append(SourcedSetting(value: .init(key: key.value, scope: .channelPrefix(prefix.value),
                                                                          app: app?.value ?? AppChannelID.defaultApp, rateLimit: rateLimit?.value,
                                                                          limits: limits?.value, followTopics: followTopics?.value ?? []),
                                                   source: source(keyPath)))
            case (true, _?):
                problems.append(.init("\(keyPath) has both \"admin\": true and a channelPrefix; an admin key has no prefix", source: source(keyPath)))
            case (false, nil):
                if members["channelPrefix"] == nil {
                    problems.append(.init("\(keyPath) needs a channelPrefix, or \"admin\": true for an admin key", source: source(keyPath)))
                }
            }
        }
        layer.adminKeys = adminKeys
        layer.providerKeys = providerKeys
    }

    // MARK: Members and types

    /// The members of an object, without `null` ones; nil (and a problem) if `value` is not an
    /// object. Unknown members are reported with their path and the closest known name.
    private mutating func object(_ value: JSONValue, at keyPath: String?, allowed: [String],
                                 expected: String = "an object") -> [String: JSONValue]? {
        guard case .object(let members) = value else {
            let what = keyPath ?? "the top level of the file"
            problems.append(.init("\(what) must be \(expected) (got \(kind(of: value)))", source: keyPath.map(source)))
            return nil
        }
        var known: [String: JSONValue] = [:]
        for member in members {
            let memberPath = keyPath.map { "\($0).\(member.name)" } ?? member.name
            guard allowed.contains(member.name) else {
                let hint = GatewayConfigurationError.closestName(to: member.name, among: allowed).map { " (did you mean '\($0)'?)" } ?? ""
                problems.append(.init("unknown key '\(memberPath)'\(hint)", source: .file(path: path, key: memberPath)))
                continue
            }
            if member.value != .null { known[member.name] = member.value }
        }
        return known
    }

    /// Converts a member, recording a problem (with its source) when it does not fit.
    private mutating func convert<Value>(_ value: JSONValue, at keyPath: String,
                                         _ conversion: (JSONValue) throws(InvalidConfigurationValue) -> Value) -> SourcedSetting<Value>? {
        do {
            return SourcedSetting(value: try conversion(value), source: source(keyPath))
        } catch {
            problems.append(.init("\(keyPath) \(error.predicate)", source: source(keyPath)))
            return nil
        }
    }

    private func source(_ keyPath: String) -> ConfigurationSource { .file(path: path, key: keyPath) }

    /// A path from the file, made relative to the file's directory.
    private static func resolve(_ relative: String, nextTo path: String) -> String {
        guard !relative.hasPrefix("/"), !relative.isEmpty, let slash = path.lastIndex(of: "/") else { return relative }
        return String(path[...slash]) + relative
    }

    /// Converts a path member, relative to the file's directory.
    private mutating func convertPath(_ value: JSONValue, at keyPath: String) -> SourcedSetting<String>? {
        let path = self.path
        return convert(value, at: keyPath) { value throws(InvalidConfigurationValue) in Self.resolve(try text(value), nextTo: path) }
    }

    private static func lineAndColumn(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        let before = bytes[..<min(offset, bytes.count)]
        let line = before.count(where: { $0 == UInt8(ascii: "\n") }) + 1
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        return (line, offset - lineStart + 1)
    }
}

private func text(_ value: JSONValue) throws(InvalidConfigurationValue) -> String {
    guard case .string(let text) = value else { throw InvalidConfigurationValue("must be a string (got \(kind(of: value)))") }
    return text
}

private func integer(_ value: JSONValue) throws(InvalidConfigurationValue) -> Int {
    guard case .integer(let number) = value, let integer = Int(exactly: number) else {
        throw InvalidConfigurationValue("must be a whole number (got \(kind(of: value)))")
    }
    return integer
}

private func boolean(_ value: JSONValue) throws(InvalidConfigurationValue) -> Bool {
    guard case .bool(let flag) = value else { throw InvalidConfigurationValue("must be true or false (got \(kind(of: value)))") }
    return flag
}

private func kind(of value: JSONValue) -> String {
    switch value {
    case .null: "null"
    case .bool: "a boolean"
    case .integer, .number: "a number"
    case .string: "a string"
    case .array: "an array"
    case .object: "an object"
    case .raw: "raw JSON"
    }
}

extension ChannelPolicy {
    /// A channel policy from the configuration (its default policy), with the core's rules;
    /// members left out come from `base`.
    init(configured value: JSONValue, base: ChannelPolicy = .default) throws(InvalidConfigurationValue) {
        do {
            self = try ChannelPolicy(json: value, base: base)
        } catch where !error.allowedNames.isEmpty {
            let name = String(error.field.split(separator: ".").last ?? "")
            let hint = GatewayConfigurationError.closestName(to: name, among: error.allowedNames).map { " (did you mean '\($0)'?)" } ?? ""
            throw InvalidConfigurationValue("has unknown key '\(error.field)'\(hint)")
        } catch {
            throw InvalidConfigurationValue("member \(error.field) \(error.problem)")
        }
    }
}
