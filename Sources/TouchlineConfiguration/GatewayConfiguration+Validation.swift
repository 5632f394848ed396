import APNs
import TouchlineCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension GatewayConfiguration {
    /// Shortest API key accepted: keys are bearer secrets, so they should be long random strings.
    public static let minimumAPIKeyLength = 16

    /// Checks everything that can be checked before start-up, so that `touchline serve` refuses
    /// to start with a clear message rather than failing on the first push:
    /// - the listen address is a numeric IPv4 or IPv6 address with a port in 0...65535;
    /// - the data directory is named and the body cap is positive;
    /// - APNs: key id and team id are 10 letters or digits, the bundle id is usable in APNs paths,
    ///   the key file is readable and holds a P-256 key, custom servers have ports in 1...65535,
    ///   the CA file is readable and holds a PEM certificate;
    /// - API keys: at least one when APNs credentials are set (development mode may run without:
    ///   `touchline serve` then generates one); every key at least
    ///   ``minimumAPIKeyLength`` characters of `A-Z a-z 0-9 - . _ ~ + /` and unique; channel
    ///   prefixes non-empty, without spaces or control characters.
    ///
    /// Reports every problem found. ``load(arguments:environment:readFile:)`` calls it and adds
    /// where each value was set.
    public func validate(readFile: (String) throws -> [UInt8] = GatewayConfiguration.readWholeFile) throws(GatewayConfigurationError) {
        try validate(origins: ConfigurationOrigins(), readFile: readFile)
    }

    func validate(origins: ConfigurationOrigins, readFile: (String) throws -> [UInt8]) throws(GatewayConfigurationError) {
        var problems: [GatewayConfigurationError.Problem] = []
        func report(_ message: String, _ setting: ConfigurationSetting) {
            problems.append(.init(message, source: origins[setting]))
        }
        if !isNumericAddress(listenHost) {
            report("listen address \"\(listenHost)\" must be a numeric IPv4 or IPv6 address, such as 127.0.0.1 or [::1]", .listen)
        }
        if !(0...65535).contains(listenPort) { report("listen port \(listenPort) must be between 0 and 65535", .listen) }
        if dataDirectory.isEmpty { report("data directory must not be empty", .dataDirectory) }
        if maxBodyBytes <= 0 { report("maximum body size must be positive, got \(maxBodyBytes)", .maxBodyBytes) }
        if http.maxBufferedBodyBytes < maxBodyBytes {
            report("http.maxBufferedBodyBytes (\(http.maxBufferedBodyBytes)) must be at least maxBodyBytes (\(maxBodyBytes)), "
                   + "or a body at the limit could never be accepted", .http)
        }
        if http.maxBufferedBodyBytesPerKey < maxBodyBytes {
            report("http.maxBufferedBodyBytesPerKey (\(http.maxBufferedBodyBytesPerKey)) must be at least maxBodyBytes (\(maxBodyBytes)), "
                   + "or a body at the limit could never be accepted", .http)
        }
        if let apns {
            apns.check(report: { message, member in report(message, member.setting) }, readFile: readFile)
        }
        if !ProviderToken.allowedRenewalMargins.contains(apnsTokenRenewalMargin) {
            report("APNs token renewal margin \(apnsTokenRenewalMargin.inNanoseconds / 1_000_000_000) s must be between 0 and 600 s "
                   + "(a renewal after clock skew must stay well inside APNs's 60-minute limit)", .apnsTokenRenewalMargin)
        }
        problems += appProblems(origins: origins, readFile: readFile)
        problems += apiKeyProblems(origins: origins)
        guard problems.isEmpty else { throw GatewayConfigurationError(problems: problems) }
    }

    private func apiKeyProblems(origins: ConfigurationOrigins) -> [GatewayConfigurationError.Problem] {
        var problems: [GatewayConfigurationError.Problem] = []
        if apiKeys.isEmpty, apns != nil {
            problems.append(.init("no API keys: with APNs credentials set, at least one is required "
                + "(set apiKeys, TOUCHLINE_ADMIN_KEY, TOUCHLINE_API_KEYS, --admin-key or --api-key)"))
        }
        var firstUse: [String: Int] = [:]
        let appNames = Set([AppChannelID.defaultApp] + apps.map(\.name))
        for (index, apiKey) in apiKeys.enumerated() {
            let source = origins.apiKey(index)
            let label: String
            switch apiKey.scope {
            case .admin:
                label = "admin API key"
            case .channelPrefix(let prefix):
                label = apiKey.app == AppChannelID.defaultApp ? "API key for prefix \"\(prefix)\""
                    : "API key for prefix \"\(prefix)\" of app '\(apiKey.app)'"
                if prefix.isEmpty {
                    problems.append(.init("API key with an empty channel prefix: give a prefix, or make it an admin key", source: source))
                } else if prefix.unicodeScalars.contains(where: { $0.properties.isWhitespace || IdentifierCharacters.isRefused($0) }) {
                    problems.append(.init("channel prefix \"\(prefix)\" must not contain spaces or control characters", source: source))
                }
            }
            if case .channelPrefix = apiKey.scope, !appNames.contains(apiKey.app) {
                problems.append(.init("\(label) is scoped to app '\(apiKey.app)', which is not configured "
                                      + "(apps: \(appNames.sorted().joined(separator: ", ")))", source: source))
            }
            if apiKey.key.isEmpty {
                problems.append(.init("\(label) is empty", source: source))
                continue
            }
            if apiKey.key.utf8.count < Self.minimumAPIKeyLength {
                problems.append(.init("\(label) is too short (\(apiKey.key.utf8.count) characters); use at least \(Self.minimumAPIKeyLength) random characters", source: source))
            }
            if !apiKey.key.utf8.allSatisfy(isAPIKeyCharacter) {
                problems.append(.init("\(label) may contain only letters, digits and - . _ ~ + /", source: source))
            }
            if let earlier = firstUse[apiKey.key] {
                let earlierSource = origins.apiKey(earlier).map { " (\($0))" } ?? ""
                problems.append(.init("\(label) repeats API key \(earlier + 1)\(earlierSource); every key must be different", source: source))
            } else {
                firstUse[apiKey.key] = index
            }
        }
        return problems
    }
}

extension GatewayConfiguration.APNsSettings {
    /// A member of the APNs settings, for naming where a problem is (the `apns` block's setting,
    /// or an app's member).
    enum Member: String {
        case keyPath, keyID, teamID, bundleID, environment, caFile

        /// The setting of the `apns` block (the default app).
        var setting: ConfigurationSetting {
            switch self {
            case .keyPath: .apnsKeyPath
            case .keyID: .apnsKeyID
            case .teamID: .apnsTeamID
            case .bundleID: .apnsBundleID
            case .environment: .apnsEnvironment
            case .caFile: .apnsCAFile
            }
        }
    }

    /// Reports every problem of these settings with the member it is in.
    func check(report: (String, Member) -> Void, readFile: (String) throws -> [UInt8]) {
        let keyIDValid = isTenAlphanumerics(keyID)
        let teamIDValid = isTenAlphanumerics(teamID)
        if !keyIDValid { report("APNs key id \"\(keyID)\" must be 10 letters or digits (got \(keyID.count) characters)", .keyID) }
        if !teamIDValid { report("APNs team id \"\(teamID)\" must be 10 letters or digits (got \(teamID.count) characters)", .teamID) }
        do {
            _ = try APNsRequestEncoder(bundleID: bundleID, environment: environment)
        } catch {
            report("APNs \(error)", .bundleID)
        }
        if case .custom(let pushHost, let pushPort, let managementHost, let managementPort) = environment {
            for (name, host, port) in [("push", pushHost, pushPort), ("management", managementHost, managementPort)] {
                if host.isEmpty { report("APNs \(name) host must not be empty", .environment) }
                if !(1...65535).contains(port) { report("APNs \(name) port \(port) must be between 1 and 65535", .environment) }
            }
        }
        do {
            let pem = try readFile(keyPath)
            // The ids are checked above on their own; stand-ins let the key be checked even when
            // they are wrong, so both problems show in one round.
            _ = try ProviderTokenSigner(pemKey: pem, source: keyPath, keyID: keyIDValid ? keyID : "0000000000",
                                        teamID: teamIDValid ? teamID : "0000000000")
        } catch let error as APNsConfigurationError {
            report("APNs \(error)", .keyPath)
        } catch {
            report("cannot read APNs key file \(keyPath): \(error)", .keyPath)
        }
        if let caFile {
            do {
                let pem = try readFile(caFile)
                if !String(decoding: pem, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") {
                    report("APNs CA file \(caFile) holds no PEM certificate", .caFile)
                }
            } catch {
                report("cannot read APNs CA file \(caFile): \(error)", .caFile)
            }
        }
    }
}

private func isTenAlphanumerics(_ id: String) -> Bool {
    id.utf8.count == 10 && id.utf8.allSatisfy { isASCIILetterOrDigit($0) }
}

private func isASCIILetterOrDigit(_ byte: UInt8) -> Bool {
    (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
}

/// RFC 6750 `b64token` characters without `=`, which separates key and prefix in `KEY=PREFIX`.
private func isAPIKeyCharacter(_ byte: UInt8) -> Bool {
    isASCIILetterOrDigit(byte) || "-._~+/".utf8.contains(byte)
}

extension GatewayConfiguration {
    /// Whether `host` (numeric) is a loopback address, reachable from this machine only.
    public static func isLoopback(_ host: String) -> Bool {
        var address = in_addr()
        if inet_pton(AF_INET, host, &address) == 1 { return UInt32(bigEndian: address.s_addr) >> 24 == 127 }
        return host == "::1"
    }
}

private func isNumericAddress(_ host: String) -> Bool {
    var address = (UInt64(0), UInt64(0))
    return withUnsafeMutableBytes(of: &address) { buffer in
        inet_pton(AF_INET, host, buffer.baseAddress) == 1 || inet_pton(AF_INET6, host, buffer.baseAddress) == 1
    }
}
