import Foundation
import Testing
import Touchline
import TouchlineCore

/// The per-key limits as operators set them: `keyLimits` from the file, the environment or a
/// flag, a key's own `limits` and `followTopics` in the file, each shown by `--check-config`,
/// and every bad value refused in one line naming the setting and its source (never the key).
@Suite struct KeyLimitsSettingsTests {
    @Test func keyLimitsComeFromEverySourceAndKeysCarryTheirOwn() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("limits.json", """
            {"apiKeys": [{"key": "acme-3f9c1e7a5b2d4c6e", "channelPrefix": "acme-", "limits": {"channels": 50, "startBurst": 10},
                          "followTopics": ["team:ARS", "league:PL:*"]},
                         {"key": "ops-8d2b4f6a1c3e5a7b", "admin": true, "limits": {"startsPerHour": 6, "startBurst": 2}}],
             "keyLimits": {"channels": 200, "startsPerHour": 30.5, "startBurst": 40, "rolloverIntervalSeconds": 1200}}
            """)
        let configuration = try GatewayConfiguration.load(arguments: ["--config", file], environment: GatewayConfigurationTests.dev)
        #expect(configuration.keyLimits == KeyLimits(channels: 200, startsPerHour: 30.5, startBurst: 40, rolloverInterval: .seconds(1200)))
        #expect(configuration.apiKeys == [
            .init(key: "ops-8d2b4f6a1c3e5a7b", scope: .admin, limits: KeyLimits.Override(startsPerHour: 6, startBurst: 2)),
            .init(key: "acme-3f9c1e7a5b2d4c6e", scope: .channelPrefix("acme-"), limits: KeyLimits.Override(channels: 50, startBurst: 10),
                  followTopics: ["team:ARS", "league:PL:*"]),
        ])
        #expect(try GatewayConfiguration.load(arguments: [], environment: GatewayConfigurationTests.dev).keyLimits == KeyLimits())
        let overridden = try GatewayConfiguration.load(arguments: ["--config", file, "--key-limits", #"{"channels": 7}"#],
                                                       environment: GatewayConfigurationTests.dev)
        #expect(overridden.keyLimits == KeyLimits(channels: 7), "a later source replaces the whole object")
        let environment = try GatewayConfiguration.load(arguments: [], environment: GatewayConfigurationTests.dev.merging(
            ["TOUCHLINE_KEY_LIMITS": #"{"rolloverIntervalSeconds": 0}"#]) { $1 })
        #expect(environment.keyLimits.rolloverInterval == .zero)

        let resolved = try GatewayConfiguration.resolve(arguments: ["--config", file], environment: GatewayConfigurationTests.dev)
        let entries = Dictionary(uniqueKeysWithValues: resolved.report.entries.map { ($0.name, $0) })
        #expect(entries["keyLimits"]?.value == "{channels: 200, startsPerHour: 30.5, startBurst: 40, rolloverInterval: 1200 s}", "\(resolved.report)")
        #expect(entries["keyLimits"]?.source.contains(file) == true)
        #expect(entries["apiKeys[1]"]?.value == "channels acme-*, key <redacted>, limits {channels: 50, startsPerHour: none, startBurst: 10}, "
                + "follow topics [team:ARS, league:PL:*]", "\(resolved.report)")
        #expect(!resolved.report.description.contains("3f9c1e7a5b2d4c6e"))
    }

    static let badValues: [(flags: [String], environment: [String: String], message: String, source: String)] = [
        (["--key-limits", #"{"channels": 0}"#], [:], "key limits member channels must be a whole number from 1 to 100000", "flag --key-limits"),
        ([], ["TOUCHLINE_KEY_LIMITS": #"{"startsPerHour": 0}"#],
         "key limits member startsPerHour must be a number from 0.01 to 1000000", "environment variable TOUCHLINE_KEY_LIMITS"),
        (["--key-limits", #"{"rolloverIntervalSeconds": 28801}"#], [:],
         "key limits member rolloverIntervalSeconds must be a whole number from 0 to 28800", "flag --key-limits"),
        (["--key-limits", #"{"startBurst": 1.5}"#], [:], "key limits member startBurst must be a whole number from 1 to 100000", "flag --key-limits"),
        (["--key-limits", #"{"channel": 5}"#], [:], "key limits has unknown key 'channel' (did you mean 'channels'?)", "flag --key-limits"),
    ]

    @Test func eachBadValueIsRefusedInOneLineNamingTheSettingAndItsSource() throws {
        let files = try ConfigurationFiles()
        for bad in Self.badValues {
            let found = problems(bad.flags, files.credentials.merging(bad.environment) { $1 })
            #expect(found.count == 1 && found.first?.message.hasPrefix(bad.message) == true, "\(found)")
            #expect(found.first?.source?.description == bad.source, "\(found)")
        }
    }

    @Test func aKeysBadLimitsOrTopicsNameItsEntryNotTheKey() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("touchline.json", """
            {"apiKeys": [{"key": "acme-3f9c1e7a5b2d4c6e", "channelPrefix": "acme-", "limits": {"rolloverIntervalSeconds": 60}},
                         {"key": "beta-3f9c1e7a5b2d4c6e", "channelPrefix": "beta-", "followTopics": ["*"]},
                         {"key": "ops-8d2b4f6a1c3e5a7b", "admin": true, "followTopics": ["team:ARS"]},
                         {"key": "gamma-3f9c1e7a5b2d4c6e", "channelPrefix": "gamma-", "followTopics": ["team:\\u2028ARS"]}]}
            """)
        let found = problems(["--config", file]).map(\.description)
        #expect(found.count == 4 && !found.contains { $0.contains("3f9c1e7a5b2d4c6e") || $0.contains("8d2b4f6a1c3e5a7b") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("apiKeys[0].limits has unknown key 'rolloverIntervalSeconds'") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("apiKeys[1].followTopics must hold follow topics") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("apiKeys[2] has both \"admin\": true and followTopics") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("apiKeys[3].followTopics must hold follow topics") }, "\(found)")
    }
}
