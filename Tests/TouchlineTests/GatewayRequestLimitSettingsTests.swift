import Foundation
import Testing
import Touchline
import TouchlineCore

/// The settings of idempotency keys and request rate limits: loaded from the file, the
/// environment and flags, every bad value refused in one line naming the setting and its source.
@Suite struct GatewayRequestLimitSettingsTests {
    @Test func keysTakeARateLimitOfTheirOwnAndProviderKeysADefault() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("limits.json", """
            {"apiKeys": [{"key": "acme-3f9c1e7a5b2d4c6e", "channelPrefix": "acme-", "rateLimit": {"requestsPerSecond": 20, "burst": 40}},
                         {"key": "ops-8d2b4f6a1c3e5a7b", "admin": true, "rateLimit": {"requestsPerSecond": 0.5, "burst": 2}},
                         {"key": "club-5e7a9c1b3d5f7a9c", "channelPrefix": "club-"}],
             "providerRateLimit": {"requestsPerSecond": 5, "burst": 10},
             "idempotency": {"keyLifetimeSeconds": 3600}}
            """)
        let configuration = try GatewayConfiguration.load(arguments: ["--config", file], environment: GatewayConfigurationTests.dev)
        #expect(configuration.apiKeys == [
            .init(key: "ops-8d2b4f6a1c3e5a7b", scope: .admin, rateLimit: KeyRateLimit(requestsPerSecond: 0.5, burst: 2)),
            .init(key: "acme-3f9c1e7a5b2d4c6e", scope: .channelPrefix("acme-"), rateLimit: KeyRateLimit(requestsPerSecond: 20, burst: 40)),
            .init(key: "club-5e7a9c1b3d5f7a9c", scope: .channelPrefix("club-")),
        ])
        #expect(configuration.providerRateLimit == KeyRateLimit(requestsPerSecond: 5, burst: 10))
        #expect(configuration.idempotency == IdempotencySettings(keyLifetime: .seconds(3_600)))

        let defaults = try GatewayConfiguration.load(arguments: [], environment: GatewayConfigurationTests.dev)
        #expect(defaults.providerRateLimit == nil && defaults.idempotency.keyLifetime == .seconds(86_400))
        #expect(!defaults.idempotency.exitAfterCommit)
        let overridden = try GatewayConfiguration.load(
            arguments: ["--config", file, "--idempotency", #"{"keyLifetimeSeconds": 60}"#],
            environment: ["TOUCHLINE_DEV": "1", "TOUCHLINE_PROVIDER_RATE_LIMIT": #"{"requestsPerSecond": 1, "burst": 1}"#, "TOUCHLINE_IDEMPOTENCY_EXIT_AFTER_COMMIT": "1"])
        #expect(overridden.idempotency.keyLifetime == .seconds(60) && overridden.idempotency.exitAfterCommit)
        #expect(overridden.providerRateLimit == KeyRateLimit(requestsPerSecond: 1, burst: 1))
    }

    static let badValues: [(flags: [String], environment: [String: String], message: String, source: String)] = [
        (["--idempotency", #"{"keyLifetimeSeconds": 0}"#], [:],
         "idempotency settings member keyLifetimeSeconds must be a whole number from 1 to 2592000", "flag --idempotency"),
        ([], ["TOUCHLINE_IDEMPOTENCY": #"{"keyLifetimeSeconds": 2592001}"#],
         "idempotency settings member keyLifetimeSeconds must be a whole number from 1 to 2592000", "environment variable TOUCHLINE_IDEMPOTENCY"),
        (["--idempotency", #"{"keyLifetime": 60}"#], [:],
         "idempotency settings has unknown key 'keyLifetime'", "flag --idempotency"),
        (["--provider-rate-limit", #"{"requestsPerSecond": 0, "burst": 1}"#], [:],
         "provider rate limit member requestsPerSecond must be a number from 0.001 to 100000", "flag --provider-rate-limit"),
        (["--provider-rate-limit", #"{"requestsPerSecond": 10, "burst": 0}"#], [:],
         "provider rate limit member burst must be a whole number from 1 to 100000", "flag --provider-rate-limit"),
        ([], ["TOUCHLINE_PROVIDER_RATE_LIMIT": #"{"requestsPerSecond": 10}"#],
         "provider rate limit needs both requestsPerSecond and burst", "environment variable TOUCHLINE_PROVIDER_RATE_LIMIT"),
        (["--provider-rate-limit", #"{"rps": 10, "burst": 1}"#], [:],
         "provider rate limit has unknown key 'rps'", "flag --provider-rate-limit"),
    ]

    @Test func eachBadValueIsRefusedInOneLineNamingTheSettingAndItsSource() throws {
        let files = try ConfigurationFiles()
        for bad in Self.badValues {
            let found = problems(bad.flags, files.credentials.merging(bad.environment) { $1 })
            #expect(found.count == 1 && found.first?.message.hasPrefix(bad.message) == true, "\(found)")
            #expect(found.first?.source?.description == bad.source, "\(found)")
        }
    }

    @Test func aBadRateLimitInTheFileNamesTheKeyEntryNotTheKey() throws {
        let files = try ConfigurationFiles()
        let file = try files.write("touchline.json", """
            {"apiKeys": [{"key": "ops-8d2b4f6a1c3e5a7b", "admin": true, "rateLimit": {"requestsPerSecond": "fast", "burst": 2}}],
             "idempotency": {"keyLifetimeSeconds": 1.5}}
            """)
        let found = problems(["--config", file]).map(\.description)
        #expect(found.count == 2 && !found.contains { $0.contains("ops-8d2b4f6a1c3e5a7b") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("apiKeys[0].rateLimit member requestsPerSecond must be a number") && $0.contains(file) })
        #expect(found.contains { $0.hasPrefix("idempotency member keyLifetimeSeconds must be a whole number from 1 to 2592000") })
    }
}
