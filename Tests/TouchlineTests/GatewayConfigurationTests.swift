import APNs
import APNsMock
import Foundation
import Testing
import Touchline
import TouchlineCore

/// A private directory with a real P-256 `.p8` key (made by the `openssl` tool) and a real CA
/// certificate, for configurations that point at files.
final class ConfigurationFiles {
    static let keyID = "ABCDE12345"
    static let teamID = "TEAM123456"
    static let bundleID = "com.example.sports"
    static let adminKey = "admin-key-0123456789abcdef"

    let directory: String
    let keyFile: String
    let caFile: String

    init() throws {
        directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        keyFile = try MockAPNsProviderKeyFiles.generate(keyID: Self.keyID, in: directory).privateKeyFile
        caFile = directory + "/ca.pem"
        try write("ca.pem", """
            -----BEGIN CERTIFICATE-----
            MIIBAA==
            -----END CERTIFICATE-----

            """)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        let path = directory + "/" + name
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Complete, valid APNs credentials and an admin key, as environment variables.
    var credentials: [String: String] {
        ["TOUCHLINE_APNS_KEY_PATH": keyFile, "TOUCHLINE_APNS_KEY_ID": Self.keyID, "TOUCHLINE_APNS_TEAM_ID": Self.teamID,
         "TOUCHLINE_APNS_BUNDLE_ID": Self.bundleID, "TOUCHLINE_ADMIN_KEY": Self.adminKey]
    }
}

/// The problems a refused configuration reports; records an issue if it was accepted.
func problems(_ arguments: [String] = [], _ environment: [String: String] = [:]) -> [GatewayConfigurationError.Problem] {
    do {
        let configuration = try GatewayConfiguration.load(arguments: arguments, environment: environment)
        Issue.record("expected the configuration to be refused, got \(configuration)")
        return []
    } catch {
        return error.problems
    }
}

@Suite struct GatewayConfigurationTests {
    // MARK: Sources and precedence

    /// Development mode, as the tests of settings other than APNs ask for it.
    static let dev = ["TOUCHLINE_DEV": "1"]

    @Test func nothingGivenIsRefusedWithOneLineNamingWhatIsMissingAndDevelopmentMode() {
        let found = problems([], ["HOME": "/root", "TOUCHLINE_UNRELATED": "x"]).map(\.description)
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.hasPrefix("no APNs credentials: give apns.keyPath, apns.keyID, apns.teamID and apns.bundleID") == true)
        for way in ["--dev", "TOUCHLINE_DEV=1", #""apns": {"mode": "mock"}"#] { #expect(found.first?.contains(way) == true, "\(way)") }
        // Saying "apple" explicitly is the same.
        #expect(problems(["--dev=false"]).map(\.description) == found)
        #expect(problems([], ["TOUCHLINE_DEV": "0"]).map(\.description) == found)
    }

    @Test func developmentModeIsAskedForByFlagVariableOrFileAndListensOnLoopback() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("dev.json", #"{"apns": {"mode": "mock"}}"#)
        for (arguments, environment) in [(["--dev"], [String: String]()), ([], ["TOUCHLINE_DEV": "1"]), ([], ["TOUCHLINE_DEV": "true"]),
                                         (["--config", file], [:])] {
            let configuration = try GatewayConfiguration.load(arguments: arguments, environment: environment)
            #expect(configuration == GatewayConfiguration(apnsMode: .mock), "\(arguments) \(environment)")
            #expect(configuration.apns == nil && configuration.apiKeys.isEmpty)
            #expect(configuration.listenHost == "127.0.0.1" && configuration.listenPort == 8080)
        }
        // Told otherwise, it listens where it is told (a container publishing its port).
        #expect(try GatewayConfiguration.load(arguments: ["--dev", "--listen", "0.0.0.0:9000"], environment: [:]).listenHost == "0.0.0.0")
        // A later source turns it off again.
        #expect(problems(["--config", file, "--dev=0"]).first?.description.hasPrefix("no APNs credentials") == true)
    }

    @Test func developmentModeWithAppleSettingsIsRefusedNamingBoth() throws {
        let files = try ConfigurationFiles()
        var environment = files.credentials
        environment["TOUCHLINE_APNS_BROADCAST_HOST"] = "api-broadcast.push.apple.com"
        let found = problems(["--dev"], environment).map(\.description)
        #expect(found.count == 5, "\(found)")
        #expect(found.allSatisfy { $0.contains("development mode (flag --dev) sends to the bundled mock APNs") })
        #expect(found.contains { $0.contains("APNs team id") && $0.contains("TOUCHLINE_APNS_TEAM_ID") })
        #expect(found.contains { $0.contains("APNs broadcast host") && $0.contains("TOUCHLINE_APNS_BROADCAST_HOST") })
        let badMode = problems([], ["TOUCHLINE_DEV": "maybe"]).map(\.description)
        #expect(badMode.first == #"development mode must be 1 or 0 (true or false), got "maybe" (environment variable TOUCHLINE_DEV)"#, "\(badMode)")
        let badFile = try files.write("bad-mode.json", #"{"apns": {"mode": "sandbox"}}"#)
        #expect(problems(["--config", badFile]).first?.description.contains(#"apns.mode must be "apple" or "mock", got "sandbox""#) == true)
    }

    @Test func theBroadcastHostIsASettingOfItsOwn() throws {
        let files = try ConfigurationFiles()
        var environment = files.credentials
        #expect(try GatewayConfiguration.load(arguments: [], environment: environment).apns?.broadcastHost == nil)
        environment["TOUCHLINE_APNS_BROADCAST_HOST"] = "api-broadcast.push.apple.com"
        #expect(try GatewayConfiguration.load(arguments: [], environment: environment).apns?.broadcastHost
                == APNsEndpoint(host: "api-broadcast.push.apple.com", port: 443))
        let flagged = try GatewayConfiguration.load(arguments: ["--apns-broadcast-host", "localhost:2197"], environment: environment)
        #expect(flagged.apns?.broadcastHost == APNsEndpoint(host: "localhost", port: 2197))
        let file = try files.write("broadcast.json", #"{"apns": {"broadcastHost": "[::1]:8443"}}"#)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file], environment: files.credentials).apns?.broadcastHost
                == APNsEndpoint(host: "::1", port: 8443))
        for bad in ["https://api.push.apple.com", "api.push.apple.com:0", "host with space", ""] where !bad.isEmpty {
            let found = problems(["--apns-broadcast-host", bad], files.credentials).map(\.description)
            #expect(found.count == 1 && found[0].hasPrefix("APNs broadcast host") && found[0].contains("(flag --apns-broadcast-host)"),
                    "\(bad): \(found)")
        }
    }

    /// `apns.tokenRenewalMarginSeconds`: how far past APNs's 20 minutes a token APNs called
    /// expired early is renewed; a minute unless set, from 0 to 600 s, each source named when wrong.
    @Test func theTokenRenewalMarginIsASettingOfItsOwn() throws {
        let files = try ConfigurationFiles()
        var environment = files.credentials
        #expect(try GatewayConfiguration.load(arguments: [], environment: environment).apnsTokenRenewalMargin == .seconds(60))
        environment["TOUCHLINE_APNS_TOKEN_RENEWAL_MARGIN"] = "90"
        #expect(try GatewayConfiguration.load(arguments: [], environment: environment).apnsTokenRenewalMargin == .seconds(90))
        #expect(try GatewayConfiguration.load(arguments: ["--apns-token-renewal-margin", "0"], environment: environment).apnsTokenRenewalMargin == .zero)
        let file = try files.write("margin.json", #"{"apns": {"tokenRenewalMarginSeconds": 600}}"#)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file], environment: files.credentials).apnsTokenRenewalMargin == .seconds(600))

        let tooLong = problems(["--apns-token-renewal-margin", "601"], files.credentials).map(\.description)
        #expect(tooLong.count == 1 && tooLong[0].hasPrefix("APNs token renewal margin 601 s must be between 0 and 600 s")
                && tooLong[0].contains("(flag --apns-token-renewal-margin)"), "\(tooLong)")
        let notSeconds = problems(["--apns-token-renewal-margin", "1m"], files.credentials).map(\.description)
        #expect(notSeconds.count == 1 && notSeconds[0].contains("must be a whole number of seconds"), "\(notSeconds)")
        let negative = try files.write("negative.json", #"{"apns": {"tokenRenewalMarginSeconds": -5}}"#)
        let inFile = problems(["--config", negative], files.credentials).map(\.description)
        #expect(inFile.count == 1 && inFile[0].contains("-5 s must be between 0 and 600 s") && inFile[0].contains("apns.tokenRenewalMarginSeconds"),
                "\(inFile)")
    }

    @Test func flagsBeatEnvironmentWhichBeatsTheFile() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("touchline.json", """
            {"listen": "127.0.0.1:1000", "dataDirectory": "/srv/from-file", "maxBodyBytes": 100,
             "apns": {"keyPath": "\(files.keyFile)", "keyID": "FILEKEY001", "teamID": "FILETEAM01", "bundleID": "com.example.file"}}
            """)
        var environment = ["TOUCHLINE_LISTEN": "127.0.0.1:2000", "TOUCHLINE_MAX_BODY_BYTES": "200",
                           "TOUCHLINE_APNS_TEAM_ID": "ENVTEAM001", "TOUCHLINE_ADMIN_KEY": ConfigurationFiles.adminKey]
        environment["TOUCHLINE_DATA_DIR"] = ""  // empty counts as unset
        let configuration = try GatewayConfiguration.load(
            arguments: ["--config", file, "--listen=[::1]:3000", "--apns-key-id", "FLAGKEY001", "--apns-environment", "sandbox"],
            environment: environment)
        #expect(configuration.listenHost == "::1" && configuration.listenPort == 3000)
        #expect(configuration.maxBodyBytes == 200)
        #expect(configuration.dataDirectory == "/srv/from-file")
        #expect(configuration.apns == GatewayConfiguration.APNsSettings(
            keyPath: files.keyFile, keyID: "FLAGKEY001", teamID: "ENVTEAM001", bundleID: "com.example.file", environment: .sandbox))
    }

    @Test func laterSourcesReplaceEachKindOfAPIKeyAsAWhole() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("keys.json", """
            {"apiKeys": [{"key": "file-admin-0123456789", "admin": true}, {"key": "file-acme-0123456789", "channelPrefix": "acme-"}]}
            """)
        let fromFileAndEnvironment = try GatewayConfiguration.load(
            arguments: ["--config", file], environment: Self.dev.merging(["TOUCHLINE_API_KEYS": "env-beta-0123456789=beta-, env-gamma-012345678=gamma-"]) { $1 })
        #expect(fromFileAndEnvironment.apiKeys == [
            .init(key: "file-admin-0123456789", scope: .admin),
            .init(key: "env-beta-0123456789", scope: .channelPrefix("beta-")),
            .init(key: "env-gamma-012345678", scope: .channelPrefix("gamma-")),
        ])
        let withFlags = try GatewayConfiguration.load(
            arguments: ["--config", file, "--admin-key", "flag-admin-0123456789", "--admin-key=flag-admin-9876543210"], environment: Self.dev)
        #expect(withFlags.apiKeys == [
            .init(key: "flag-admin-0123456789", scope: .admin), .init(key: "flag-admin-9876543210", scope: .admin),
            .init(key: "file-acme-0123456789", scope: .channelPrefix("acme-")),
        ])
    }

    @Test func aValidFullFileLoadsEverySetting() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("full.json", """
            {
              "listen": "0.0.0.0:8443",
              "dataDirectory": "/var/lib/touchline",
              "maxBodyBytes": 262144,
              "apns": {
                "keyPath": "\(files.keyFile)",
                "keyID": "\(ConfigurationFiles.keyID)",
                "teamID": "\(ConfigurationFiles.teamID)",
                "bundleID": "\(ConfigurationFiles.bundleID)",
                "environment": {"pushHost": "localhost", "pushPort": 2197, "managementHost": "localhost", "managementPort": 2198},
                "caFile": "ca.pem"
              },
              "apiKeys": [
                {"key": "acme-3f9c1e7a5b2d4c6e", "channelPrefix": "acme-"},
                {"key": "ops-8d2b4f6a1c3e5a7b", "admin": true}
              ],
              "defaultPolicy": {"minimumIntervalSeconds": 1.5, "burst": 5, "throttleBackoff": {"jitter": 0}, "relevanceScore": null}
            }
            """)
        let configuration = try GatewayConfiguration.load(arguments: ["--config", file], environment: [:])
        var policy = ChannelPolicy.default
        policy.minimumInterval = .milliseconds(1500)
        policy.burst = 5
        policy.throttleBackoff.jitter = 0
        policy.relevanceScore = nil
        #expect(configuration == GatewayConfiguration(
            apns: .init(keyPath: files.keyFile, keyID: ConfigurationFiles.keyID, teamID: ConfigurationFiles.teamID,
                        bundleID: ConfigurationFiles.bundleID,
                        environment: .custom(pushHost: "localhost", pushPort: 2197, managementHost: "localhost", managementPort: 2198),
                        caFile: files.caFile),
            listenHost: "0.0.0.0", listenPort: 8443, dataDirectory: "/var/lib/touchline",
            apiKeys: [.init(key: "ops-8d2b4f6a1c3e5a7b", scope: .admin), .init(key: "acme-3f9c1e7a5b2d4c6e", scope: .channelPrefix("acme-"))],
            defaultPolicy: policy, maxBodyBytes: 262_144))
    }

    @Test func theExampleFileInTheDocumentationLoads() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/configuration.md")
        let page = try String(contentsOf: docs, encoding: .utf8)
        let section = try #require(page.components(separatedBy: "\n## The file\n").dropFirst().first)
        let example = try #require(section.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let files = try ConfigurationFiles()  // its key file is the AuthKey_ABCDE12345.p8 the example names
        let configuration = try GatewayConfiguration.load(arguments: ["--config", try files.write("touchline.json", example)], environment: [:])
        #expect(configuration.apns?.keyPath == files.keyFile)
        #expect(configuration.apiKeys.count == 2)
        #expect(configuration.defaultPolicy.throttleBackoff.maximum == .seconds(60))
        #expect(configuration.logLevel == .info)
    }

    @Test func theLogLevelIsInfoUnlessTheFileTheEnvironmentOrAFlagSaysOtherwise() throws {
        #expect(try GatewayConfiguration.load(arguments: [], environment: Self.dev).logLevel == .info)
        let files = try ConfigurationFiles()
        let file = try files.write("log.json", #"{"log": {"level": "warning"}}"#)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file], environment: Self.dev).logLevel == .warning)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file], environment: ["TOUCHLINE_LOG_LEVEL": "debug", "TOUCHLINE_DEV": "1"]).logLevel == .debug)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file, "--log-level", "error"],
                                              environment: ["TOUCHLINE_LOG_LEVEL": "debug", "TOUCHLINE_DEV": "1"]).logLevel == .error)
    }

    @Test func theAlertModeIsTextUnlessTheFileTheEnvironmentOrAFlagSaysOtherwise() throws {
        #expect(try GatewayConfiguration.load(arguments: [], environment: Self.dev).alertMode == .text)
        let files = try ConfigurationFiles()
        let file = try files.write("alerts.json", #"{"alerts": {"mode": "localized"}}"#)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file], environment: Self.dev).alertMode == .localized)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file, "--alerts-mode", "text"], environment: Self.dev).alertMode == .text)
        #expect(try GatewayConfiguration.load(arguments: [], environment: ["TOUCHLINE_ALERTS_MODE": "localized", "TOUCHLINE_DEV": "1"]).alertMode
                == .localized)
        let unknown = try files.write("bad-alerts.json", #"{"alerts": {"mode": "text", "language": "fi"}}"#)
        #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.load(arguments: ["--config", unknown], environment: Self.dev) }
    }

    @Test func relativePathsInTheFileAreRelativeToTheFile() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("relative.json", #"{"dataDirectory": "data", "apns": {"caFile": "ca.pem"}}"#)
        var environment = files.credentials
        environment["TOUCHLINE_APNS_ENVIRONMENT"] = "localhost:2197,localhost:2198"
        let configuration = try GatewayConfiguration.load(arguments: ["--config", file], environment: environment)
        #expect(configuration.dataDirectory == files.directory + "/data")
        #expect(configuration.apns?.caFile == files.caFile)
        #expect(configuration.apns?.environment == .custom(pushHost: "localhost", pushPort: 2197, managementHost: "localhost", managementPort: 2198))
    }

    @Test func thePolicyCanAlsoComeFromTheEnvironment() throws {
        let configuration = try GatewayConfiguration.load(
            arguments: [], environment: ["TOUCHLINE_DEV": "1", "TOUCHLINE_DEFAULT_POLICY": #"{"priorityBudgetPerHour": 0, "endGracePeriodSeconds": 0}"#])
        #expect(configuration.defaultPolicy.priorityBudgetPerHour == 0)
        #expect(configuration.defaultPolicy.endGracePeriod == .zero)
        #expect(configuration.defaultPolicy.burst == ChannelPolicy.default.burst)
    }

    @Test func thePersonalQueueComesFromTheFileWithDefaultsForWhatItLeavesOut() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("personal.json", """
            {"personalQueue": {"connections": 4, "maxInFlight": 2000, "saveIntervalMilliseconds": 50,
                               "delivery": {"maxAttempts": 3, "retryInitialMilliseconds": 100, "jitter": 0}}}
            """)
        let queue = try GatewayConfiguration.load(arguments: ["--config", file], environment: Self.dev).personalQueue
        var delivery = PersonalDeliveryPolicy()
        delivery.maxAttempts = 3
        delivery.retryInitialMilliseconds = 100
        delivery.jitter = 0
        #expect(queue == PersonalQueueSettings(connections: 4, maxInFlight: 2_000, saveInterval: .milliseconds(50), delivery: delivery))
        let flagged = try GatewayConfiguration.load(arguments: ["--config", file, "--personal-queue", #"{"window": 500, "pageSize": 100}"#],
                                                    environment: Self.dev).personalQueue
        #expect(flagged == PersonalQueueSettings(window: 500, pageSize: 100), "a later source replaces the whole object")
    }

    @Test func metricsSettingsComeFromTheFileAndAreChecked() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("metrics.json", #"{"metrics": {"requireKey": true, "maxChannelLabels": 50}}"#)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file], environment: Self.dev).metrics
                == MetricsSettings(requireKey: true, maxChannelLabels: 50))
        #expect(try GatewayConfiguration.load(arguments: [], environment: Self.dev).metrics == MetricsSettings(requireKey: false, maxChannelLabels: 200))
        let flagged = try GatewayConfiguration.load(arguments: ["--config", file, "--metrics", #"{"maxChannelLabels": 0}"#], environment: Self.dev)
        #expect(flagged.metrics == MetricsSettings(maxChannelLabels: 0), "a later source replaces the whole object")
        let typo = problems(["--dev", "--metrics", #"{"requireKeys": true}"#]).map(\.description)
        #expect(typo.count == 1 && typo[0].contains("requireKeys") && typo[0].contains("did you mean 'requireKey'"), "\(typo)")
        let range = problems(["--dev"], ["TOUCHLINE_METRICS": #"{"maxChannelLabels": 100001}"#]).map(\.description)
        #expect(range.count == 1 && range[0].contains("maxChannelLabels must be a whole number from 0 to 100000"), "\(range)")
    }

    @Test func exportAndRecordingBoundsComeFromEverySourceAndAreChecked() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("recordings.json", #"{"recordings": {"maxExportsPerKey": 1, "maxShadowChannels": 10}}"#)
        var expected = RecordingLimits()
        (expected.maxExportsPerKey, expected.maxShadowChannels) = (1, 10)
        #expect(try GatewayConfiguration.load(arguments: ["--config", file], environment: Self.dev).recordings == expected)
        #expect(try GatewayConfiguration.load(arguments: [], environment: Self.dev).recordings == RecordingLimits())
        let flagged = try GatewayConfiguration.load(arguments: ["--config", file, "--recordings", #"{"maxRecordedBytesPerKey": 0}"#],
                                                    environment: Self.dev)
        var replaced = RecordingLimits()
        replaced.maxRecordedBytesPerKey = 0
        #expect(flagged.recordings == replaced, "a later source replaces the whole object")
        let typo = problems(["--dev", "--recordings", #"{"maxExportPerKey": 3}"#]).map(\.description)
        #expect(typo.count == 1 && typo[0].contains("did you mean 'maxExportsPerKey'"), "\(typo)")
        let range = problems(["--dev"], ["TOUCHLINE_RECORDINGS": #"{"maxConcurrentExports": 0}"#]).map(\.description)
        #expect(range.count == 1 && range[0].contains("maxConcurrentExports must be a whole number from 1 to 256"), "\(range)")
    }

    // MARK: APNs credentials: all or nothing

    @Test func allFourCredentialsGiveRealAPNsInProductionByDefault() throws {
        let files = try ConfigurationFiles()
        let configuration = try GatewayConfiguration.load(arguments: [], environment: files.credentials)
        #expect(configuration.apns == .init(keyPath: files.keyFile, keyID: ConfigurationFiles.keyID, teamID: ConfigurationFiles.teamID,
                                            bundleID: ConfigurationFiles.bundleID, environment: .production))
    }

    @Test func someCredentialsWithoutTheOthersNameEachMissingOne() {
        let found = problems(["--apns-key-id", "ABCDE12345", "--max-body-bytes", "0"], ["TOUCHLINE_APNS_TEAM_ID": "TEAM123456"])
        #expect(found.map(\.description) == [
            "APNs credentials incomplete: missing key path (set apns.keyPath, TOUCHLINE_APNS_KEY_PATH or --apns-key)",
            "APNs credentials incomplete: missing bundle id (set apns.bundleID, TOUCHLINE_APNS_BUNDLE_ID or --apns-bundle-id)",
            "maximum body size must be positive, got 0 (flag --max-body-bytes)",
        ])
    }

    @Test func anEnvironmentWithoutCredentialsIsRefusedRatherThanIgnored() {
        let found = problems([], ["TOUCHLINE_APNS_ENVIRONMENT": "sandbox"])
        #expect(found == [.init("APNs environment is set but there are no APNs credentials: give the key path, key id, team id and bundle id",
                                source: .environment("TOUCHLINE_APNS_ENVIRONMENT"))])
    }

    // MARK: Messages

    /// One bad value on top of valid credentials; `$DIR` stands for the fixture's directory.
    struct BadValue: Sendable, CustomTestStringConvertible {
        var flags: [String] = []
        var environment: [String: String] = [:]
        var message: String
        var source: String?

        var testDescription: String { message }
    }

    static let badValues: [BadValue] = [
        BadValue(flags: ["--apns-teamid", "TEAM123456"], message: "unknown flag --apns-teamid (did you mean --apns-team-id?)"),
        BadValue(flags: ["--port=80"], message: "unknown flag --port"),
        BadValue(flags: ["--listen"], message: "flag --listen needs a value: --listen ADDRESS:PORT"),
        BadValue(flags: ["serve"], message: "unexpected argument 'serve': settings are given as --flag VALUE"),
        BadValue(flags: ["--listen", "localhost:80"],
                 message: "listen address \"localhost\" must be a numeric IPv4 or IPv6 address, such as 127.0.0.1 or [::1]", source: "flag --listen"),
        BadValue(environment: ["TOUCHLINE_LISTEN": "127.0.0.1:99999"],
                 message: "listen port 99999 must be between 0 and 65535", source: "environment variable TOUCHLINE_LISTEN"),
        BadValue(flags: ["--listen=8080"], message: "listen address must be HOST:PORT, got \"8080\"", source: "flag --listen"),
        BadValue(flags: ["--listen", "::1:8080"],
                 message: "listen address must have an IPv6 address in brackets, as in [::1]:8080, got \"::1:8080\"", source: "flag --listen"),
        BadValue(flags: ["--max-body-bytes", "0"], message: "maximum body size must be positive, got 0", source: "flag --max-body-bytes"),
        BadValue(environment: ["TOUCHLINE_MAX_BODY_BYTES": "1MB"], message: "maximum body size must be a whole number of bytes, got \"1MB\"",
                 source: "environment variable TOUCHLINE_MAX_BODY_BYTES"),
        BadValue(flags: ["--apns-environment", "staging"],
                 message: "APNs environment must be production, sandbox or PUSHHOST:PORT,MANAGEMENTHOST:PORT, got \"staging\"",
                 source: "flag --apns-environment"),
        BadValue(flags: ["--apns-environment", "localhost:0,localhost:2198"], message: "APNs push port 0 must be between 1 and 65535",
                 source: "flag --apns-environment"),
        BadValue(environment: ["TOUCHLINE_APNS_KEY_ID": "ABC"], message: "APNs key id \"ABC\" must be 10 letters or digits (got 3 characters)",
                 source: "environment variable TOUCHLINE_APNS_KEY_ID"),
        BadValue(flags: ["--apns-team-id", "TEAM-12345"], message: "APNs team id \"TEAM-12345\" must be 10 letters or digits (got 10 characters)",
                 source: "flag --apns-team-id"),
        BadValue(flags: ["--apns-bundle-id", "com.example.sports.push-type.liveactivity"],
                 message: "APNs bundle id \"com.example.sports.push-type.liveactivity\" is not usable: give the plain bundle id; the .push-type.liveactivity topic suffix is added where needed",
                 source: "flag --apns-bundle-id"),
        BadValue(flags: ["--apns-key", "$DIR/missing.p8"], message: "cannot read APNs key file $DIR/missing.p8: No such file or directory",
                 source: "flag --apns-key"),
        BadValue(flags: ["--apns-key", "$DIR"], message: "cannot read APNs key file $DIR: Is a directory", source: "flag --apns-key"),
        BadValue(flags: ["--apns-key", "$DIR/ca.pem"], message: "APNs key file $DIR/ca.pem is not a PEM private key (it holds a CERTIFICATE, not a private key)",
                 source: "flag --apns-key"),
        BadValue(flags: ["--apns-ca-file", "$DIR/AuthKey_ABCDE12345.p8"], message: "APNs CA file $DIR/AuthKey_ABCDE12345.p8 holds no PEM certificate",
                 source: "flag --apns-ca-file"),
        BadValue(environment: ["TOUCHLINE_APNS_CA_FILE": "$DIR/none.pem"], message: "cannot read APNs CA file $DIR/none.pem: No such file or directory",
                 source: "environment variable TOUCHLINE_APNS_CA_FILE"),
        BadValue(environment: ["TOUCHLINE_ADMIN_KEY": ""],
                 message: "no API keys: with APNs credentials set, at least one is required (set apiKeys, TOUCHLINE_ADMIN_KEY, TOUCHLINE_API_KEYS, --admin-key or --api-key)"),
        BadValue(environment: ["TOUCHLINE_API_KEYS": "acme-0123456789abcdef="], message: "API key with an empty channel prefix: give a prefix, or make it an admin key",
                 source: "environment variable TOUCHLINE_API_KEYS"),
        BadValue(environment: ["TOUCHLINE_API_KEYS": "acme-0123456789abcdef=acme -"], message: "channel prefix \"acme -\" must not contain spaces or control characters",
                 source: "environment variable TOUCHLINE_API_KEYS"),
        BadValue(environment: ["TOUCHLINE_API_KEYS": "acme-0123456789abcdef"],
                 message: "provider API keys must be KEY=PREFIX[,KEY=PREFIX...] (entry 1 has no '=')", source: "environment variable TOUCHLINE_API_KEYS"),
        BadValue(flags: ["--admin-key", "hunter2"], message: "admin API key is too short (7 characters); use at least 16 random characters",
                 source: "flag --admin-key"),
        BadValue(flags: ["--api-key", "acme key 0123456789=acme-"], message: "API key for prefix \"acme-\" may contain only letters, digits and - . _ ~ + /",
                 source: "flag --api-key"),
        BadValue(flags: ["--api-key", "admin-key-0123456789abcdef=acme-"],
                 message: "API key for prefix \"acme-\" repeats API key 1 (environment variable TOUCHLINE_ADMIN_KEY); every key must be different",
                 source: "flag --api-key"),
        BadValue(flags: ["--default-policy", #"{"burst": 0}"#], message: "default channel policy member burst must be a whole number from 1 to 1000, got 0",
                 source: "flag --default-policy"),
        BadValue(flags: ["--default-policy", #"{"bursts": 1}"#], message: "default channel policy has unknown key 'bursts' (did you mean 'burst'?)",
                 source: "flag --default-policy"),
        BadValue(flags: ["--default-policy", #"{"burst": 2.5}"#], message: "default channel policy member burst must be a whole number from 1 to 1000, got 2.5",
                 source: "flag --default-policy"),
        BadValue(flags: ["--default-policy", #"{"freshnessSeconds": 1e-19}"#],
                 message: "default channel policy member freshnessSeconds must be from 0.001 to 86400 seconds, got 1e-19",
                 source: "flag --default-policy"),
        BadValue(flags: ["--default-policy", #"{"burst": "many"}"#], message: "default channel policy member burst must be a whole number from 1 to 1000, got a string",
                 source: "flag --default-policy"),
        BadValue(environment: ["TOUCHLINE_DEFAULT_POLICY": "{"],
                 message: "default channel policy is not valid JSON: unexpected end of input, expected a string member name at byte 1",
                 source: "environment variable TOUCHLINE_DEFAULT_POLICY"),
        BadValue(flags: ["--personal-queue", #"{"maxInFlight": 0}"#],
                 message: "personal queue settings member maxInFlight must be a whole number from 1 to 100000", source: "flag --personal-queue"),
        BadValue(flags: ["--personal-queue", #"{"pageSize": 500, "window": 100}"#],
                 message: "personal queue settings member pageSize must be at most window (100), got 500", source: "flag --personal-queue"),
        BadValue(environment: ["TOUCHLINE_PERSONAL_QUEUE": #"{"delivery": {"maxAttempt": 3}}"#],
                 message: "personal queue settings has unknown key 'delivery.maxAttempt' (did you mean 'maxAttempts'?)",
                 source: "environment variable TOUCHLINE_PERSONAL_QUEUE"),
        BadValue(flags: ["--personal-queue", #"{"delivery": {"jitter": 2}}"#],
                 message: "personal queue settings member delivery.jitter must be a number from 0.0 to 1.0", source: "flag --personal-queue"),
        BadValue(flags: ["--log-level", "verbose"], message: "log level must be one of debug, info, notice, warning, error, got \"verbose\"",
                 source: "flag --log-level"),
        BadValue(flags: ["--alerts-mode", "localised"], message: "alert mode must be one of text, localized, got \"localised\"",
                 source: "flag --alerts-mode"),
        BadValue(environment: ["TOUCHLINE_LOG_LEVEL": "INFO"], message: "log level must be one of debug, info, notice, warning, error, got \"INFO\"",
                 source: "environment variable TOUCHLINE_LOG_LEVEL"),
        BadValue(flags: ["--config", "$DIR/missing.json"], message: "cannot read configuration file $DIR/missing.json: No such file or directory",
                 source: "flag --config"),
    ]

    @Test(arguments: badValues)
    func eachBadValueIsRefusedNamingItsSource(_ bad: BadValue) throws {
        let files = try ConfigurationFiles()
        let expand = { (text: String) in text.replacingOccurrences(of: "$DIR", with: files.directory) }
        let environment = files.credentials.merging(bad.environment.mapValues(expand)) { $1 }
        let found = problems(bad.flags.map(expand), environment)
        #expect(found.count == 1, "\(found)")
        let message = expand(bad.message)
        #expect(found.first.map { $0.message.hasPrefix(message) && ($0.message == message || message.hasSuffix(": ")) } == true, "\(found)")
        #expect(found.first?.source?.description == bad.source.map(expand))
    }

    @Test func everyProblemIsReportedAtOnceOnePerLine() throws {
        let files = try ConfigurationFiles()
        let error = #expect(throws: GatewayConfigurationError.self) {
            try GatewayConfiguration.load(arguments: ["--apns-key-id", "ABC", "--listen", "localhost:1", "--max-body-bytes", "0"],
                                          environment: files.credentials.merging(["TOUCHLINE_APNS_TEAM_ID": "TEAM1"]) { $1 })
        }
        #expect(error?.description.split(separator: "\n").count == 4, "\(String(describing: error))")
        #expect(error?.description.contains("APNs team id \"TEAM1\" must be 10 letters or digits (got 5 characters) (environment variable TOUCHLINE_APNS_TEAM_ID)") == true)
    }

    @Test func keysNeverAppearInMessages() throws {
        let files = try ConfigurationFiles()
        let secret = "s3cret-key-that-must-not-leak"
        let repeated = problems(["--api-key", "\(secret)=a-", "--api-key", "\(secret)=b-"], files.credentials)
        let malformed = problems(["--api-key", secret], files.credentials)
        let found = repeated + malformed
        #expect(repeated.count == 1 && malformed.count == 1)
        #expect(found.allSatisfy { !$0.description.contains(secret) }, "\(found)")
    }

    // MARK: The file

    func fileProblems(_ json: String) throws -> [GatewayConfigurationError.Problem] {
        let files = try ConfigurationFiles()
        let path = try files.write("touchline.json", json)
        return problems(["--config", path], files.credentials).map { problem in
            var problem = problem
            problem.message = problem.message.replacingOccurrences(of: path, with: "touchline.json")
            if case .file(_, let key) = problem.source { problem.source = .file(path: "touchline.json", key: key) }
            return problem
        }
    }

    @Test func unknownKeysAreRefusedWithTheirPathAndTheClosestName() throws {
        let found = try fileProblems("""
            {"listn": "127.0.0.1:1", "apns": {"teamId": "TEAM123456"}, "apiKeys": [{"key": "k", "prefix": "a-"}],
             "defaultPolicy": {"throttleBackoff": {"jiter": 0}}, "colour": "blue"}
            """)
        #expect(found.map(\.description) == [
            "unknown key 'listn' (did you mean 'listen'?) (listn in touchline.json)",
            "unknown key 'colour' (colour in touchline.json)",
            "unknown key 'apns.teamId' (did you mean 'teamID'?) (apns.teamId in touchline.json)",
            "unknown key 'apiKeys[0].prefix' (apiKeys[0].prefix in touchline.json)",
            "apiKeys[0] needs a channelPrefix, or \"admin\": true for an admin key (apiKeys[0] in touchline.json)",
            "defaultPolicy has unknown key 'throttleBackoff.jiter' (did you mean 'jitter'?) (defaultPolicy in touchline.json)",
        ])
    }

    @Test func theFileNamesALogLevelItCannotUse() throws {
        #expect(try fileProblems(#"{"log": {"levl": "debug"}}"#).map(\.description)
            == ["unknown key 'log.levl' (did you mean 'level'?) (log.levl in touchline.json)"])
        #expect(try fileProblems(#"{"log": {"level": "trace"}}"#).map(\.description)
            == [#"log.level must be one of debug, info, notice, warning, error, got "trace" (log.level in touchline.json)"#])
    }

    @Test func badJSONIsRefusedWithItsByteOffsetLineAndColumn() throws {
        #expect(try fileProblems("{\"listen\": \"127.0.0.1:1\",}").map(\.description)
            == ["configuration file touchline.json is not valid JSON: expected a string member name at byte 25 (line 1, column 26)"])
        #expect(try fileProblems("{\n  \"maxBodyBytes\": 10\n  \"listen\": \"x\"\n}").map(\.description)
            == ["configuration file touchline.json is not valid JSON: expected ',' or '}' at byte 25 (line 3, column 3)"])
    }

    @Test func wrongTypesAndShapesNameTheMember() throws {
        let found = try fileProblems("""
            {"maxBodyBytes": "1MiB", "listen": 8080, "dataDirectory": ["a"],
             "apns": {"environment": {"pushHost": "localhost", "pushPort": "2197"}},
             "apiKeys": [{"key": "admin-0123456789abcdef", "admin": true, "channelPrefix": "a-"}, "plain", {"channelPrefix": "b-"}],
             "defaultPolicy": {"burst": 0}}
            """).map(\.description)
        #expect(found == [
            "listen must be a string (got a number) (listen in touchline.json)",
            "dataDirectory must be a string (got an array) (dataDirectory in touchline.json)",
            "maxBodyBytes must be a whole number (got a string) (maxBodyBytes in touchline.json)",
            "apns.environment needs managementHost: give all of pushHost, pushPort, managementHost, managementPort (apns.environment in touchline.json)",
            "apns.environment needs managementPort: give all of pushHost, pushPort, managementHost, managementPort (apns.environment in touchline.json)",
            "apns.environment.pushPort must be a whole number (got a string) (apns.environment.pushPort in touchline.json)",
            "apiKeys[0] has both \"admin\": true and a channelPrefix; an admin key has no prefix (apiKeys[0] in touchline.json)",
            "apiKeys[1] must be an object (got a string) (apiKeys[1] in touchline.json)",
            "apiKeys[2] has no key (apiKeys[2] in touchline.json)",
            "defaultPolicy member burst must be a whole number from 1 to 1000, got 0 (defaultPolicy in touchline.json)",
        ])
    }

    @Test func theTopLevelMustBeAnObject() throws {
        #expect(try fileProblems("[]").map(\.description) == ["the top level of the file must be an object (got an array)"])
    }

    // MARK: Values built in code

    @Test func validateChecksAValueBuiltInCode() throws {
        try GatewayConfiguration().validate()
        let files = try ConfigurationFiles()
        let configuration = GatewayConfiguration(
            apns: .init(keyPath: files.keyFile, keyID: ConfigurationFiles.keyID, teamID: ConfigurationFiles.teamID,
                        bundleID: ConfigurationFiles.bundleID, environment: .sandbox),
            listenPort: 70000)
        let error = #expect(throws: GatewayConfigurationError.self) { try configuration.validate() }
        #expect(error?.problems == [
            .init("listen port 70000 must be between 0 and 65535"),
            .init("no API keys: with APNs credentials set, at least one is required (set apiKeys, TOUCHLINE_ADMIN_KEY, TOUCHLINE_API_KEYS, --admin-key or --api-key)"),
        ])
    }

    @Test func theDocumentationNamesEveryFlagAndVariable() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/configuration.md")
        let page = try String(contentsOf: docs, encoding: .utf8)
        for option in GatewayConfiguration.commandLineOptions {
            #expect(page.contains("`\(option.name)"), "\(option.name)")
            #expect(page.contains("`\(option.environmentVariable ?? "")"), "\(option.name)")
        }
    }

    @Test func theHelpTextListsEveryFlagWithItsVariable() {
        // One entry per setting: its first line starts with the flag, continuation lines are indented further.
        var entries: [String] = []
        for line in GatewayConfiguration.commandLineHelp.split(separator: "\n") {
            if line.hasPrefix("  --") { entries.append(String(line)) } else { entries[entries.count - 1] += " " + line }
        }
        for (flag, variable) in [("--config PATH", "TOUCHLINE_CONFIG"), ("--apns-key PATH", "TOUCHLINE_APNS_KEY_PATH"),
                                 ("--api-key KEY=PREFIX", "TOUCHLINE_API_KEYS"), ("--default-policy JSON", "TOUCHLINE_DEFAULT_POLICY"),
                                 ("--metrics JSON", "TOUCHLINE_METRICS"), ("--http JSON", "TOUCHLINE_HTTP"),
                                 ("--dev ", "TOUCHLINE_DEV"), ("--apns-broadcast-host HOST[:PORT]", "TOUCHLINE_APNS_BROADCAST_HOST"),
                                 ("--webhooks JSON", "TOUCHLINE_WEBHOOKS"),
                                 ("--idempotency JSON", "TOUCHLINE_IDEMPOTENCY"), ("--provider-rate-limit JSON", "TOUCHLINE_PROVIDER_RATE_LIMIT"),
                                 ("--store JSON", "TOUCHLINE_STORE"), ("--alerts-mode MODE", "TOUCHLINE_ALERTS_MODE"),
                                 ("--apns-token-renewal-margin SECONDS", "TOUCHLINE_APNS_TOKEN_RENEWAL_MARGIN"),
                                 ("--recordings JSON", "TOUCHLINE_RECORDINGS"),
                                 ("--key-limits JSON", "TOUCHLINE_KEY_LIMITS")] {
            #expect(entries.contains { $0.hasPrefix("  \(flag)") && $0.hasSuffix("[\(variable)]") }, "\(flag)")
        }
        #expect(entries.count == 27)
        #expect(GatewayConfiguration.commandLineOptions.map(\.name).count == Set(GatewayConfiguration.commandLineOptions.map(\.name)).count)
    }
}
