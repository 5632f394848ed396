import Foundation
import Testing
import Touchline

/// What `touchline serve --check-config` prints, from the same resolution `serve` uses.
@Suite struct ConfigurationReportTests {
    @Test func everySettingHasOneLineWithItsSource() throws {
        let resolved = try GatewayConfiguration.resolve(
            arguments: ["--dev", "--max-body-bytes=2048", "--api-key", "flag-acme-0123456789=acme-"],
            environment: ["TOUCHLINE_LOG_LEVEL": "notice", "TOUCHLINE_ADMIN_KEY": "env-admin-0123456789",
                          "TOUCHLINE_PROVIDER_RATE_LIMIT": #"{"requestsPerSecond": 5, "burst": 10}"#])
        let entries = Dictionary(uniqueKeysWithValues: resolved.report.entries.map { ($0.name, $0) })
        #expect(resolved.report.entries.count == 25 + 2, "25 settings besides the keys, and one line per key")
        #expect(entries["apns.tokenRenewalMarginSeconds"] == .init(name: "apns.tokenRenewalMarginSeconds", value: "60 s", source: "default"))
        #expect(entries["recordings"]?.value == "{maxConcurrentExports: 4, maxExportsPerKey: 2, maxRecordedBytes: 8589934592, "
                    + "maxRecordedBytesPerKey: 1073741824, maxShadowChannels: 1000, maxShadowChannelsPerKey: 100}", "\(String(describing: entries["recordings"]))")
        #expect(entries["alerts.mode"] == .init(name: "alerts.mode", value: "text", source: "default"))
        #expect(entries["maxBodyBytes"] == .init(name: "maxBodyBytes", value: "2048", source: "flag --max-body-bytes"))
        #expect(entries["log.level"] == .init(name: "log.level", value: "notice", source: "environment variable TOUCHLINE_LOG_LEVEL"))
        #expect(entries["listen"] == .init(name: "listen", value: "127.0.0.1:8080", source: "default"))
        #expect(entries["apns.mode"]?.source == "flag --dev")
        #expect(entries["apns.teamID"]?.value == "not used in development mode")
        #expect(entries["providerRateLimit"]?.value == "{requestsPerSecond: 5.0, burst: 10}")
        #expect(entries["apiKeys[0]"] == .init(name: "apiKeys[0]", value: "admin, key <redacted>", source: "environment variable TOUCHLINE_ADMIN_KEY"))
        #expect(entries["apiKeys[1]"] == .init(name: "apiKeys[1]", value: "channels acme-*, key <redacted>", source: "flag --api-key"))
        #expect(!resolved.report.description.contains("0123456789"), "\(resolved.report)")
        #expect(resolved.configuration == (try GatewayConfiguration.load(
            arguments: ["--dev", "--max-body-bytes=2048", "--api-key", "flag-acme-0123456789=acme-"],
            environment: ["TOUCHLINE_LOG_LEVEL": "notice", "TOUCHLINE_ADMIN_KEY": "env-admin-0123456789",
                          "TOUCHLINE_PROVIDER_RATE_LIMIT": #"{"requestsPerSecond": 5, "burst": 10}"#])))
    }

    @Test func theReportLinesUpInThreeColumns() {
        let report = ConfigurationReport(entries: [.init(name: "listen", value: "127.0.0.1:8080", source: "default"),
                                                   .init(name: "log.level", value: "info", source: "flag --log-level")])
        #expect(report.description == """
            listen     127.0.0.1:8080  (default)
            log.level  info            (flag --log-level)
            """)
    }
}
