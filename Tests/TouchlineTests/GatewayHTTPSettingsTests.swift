import Foundation
import Testing
import Touchline
import TouchlineRuntime

/// `http`: the provider API's connection cap, body budget and deadlines, from any source,
/// checked member by member, and shown by `--check-config`.
@Suite struct GatewayHTTPSettingsTests {
    @Test func theDefaultsAndEachSource() throws {
        #expect(try GatewayConfiguration.load(arguments: [], environment: GatewayConfigurationTests.dev).http == HTTPConnectionLimits())
        let defaults = HTTPConnectionLimits()
        #expect(defaults.maxConnections == 1024 && defaults.maxBufferedBodyBytes == 64 << 20)
        #expect(defaults.headTimeout == .seconds(10) && defaults.bodyTimeout == .seconds(30))
        #expect(defaults.idleTimeout == .seconds(60) && defaults.writeTimeout == .seconds(30))
        #expect(defaults.maxConnectionsPerAddress == 128 && defaults.probeConnections == 16)
        #expect(defaults.maxBufferedBodyBytesPerKey == 16 << 20 && defaults.firstRequestTimeout == .seconds(5))

        let files = try ConfigurationFiles()
        let file = try files.write("http.json", #"{"http": {"maxConnections": 4096, "headTimeoutMilliseconds": 5000}}"#)
        let fromFile = try GatewayConfiguration.load(arguments: ["--config", file], environment: GatewayConfigurationTests.dev).http
        #expect(fromFile == HTTPConnectionLimits(maxConnections: 4096, headTimeout: .seconds(5)))
        let fromEnvironment = try GatewayConfiguration.load(arguments: ["--config", file],
                                                            environment: ["TOUCHLINE_DEV": "1", "TOUCHLINE_HTTP": #"{"idleTimeoutMilliseconds": 15000}"#]).http
        #expect(fromEnvironment == HTTPConnectionLimits(idleTimeout: .seconds(15)), "a later source replaces the whole object")
        let fromFlag = try GatewayConfiguration.load(arguments: ["--http", #"{"maxBufferedBodyBytes": 8388608, "writeTimeoutMilliseconds": 1000}"#],
                                                     environment: GatewayConfigurationTests.dev).http
        #expect(fromFlag == HTTPConnectionLimits(maxBufferedBodyBytes: 8 << 20, writeTimeout: .seconds(1)))
        let lockouts = try GatewayConfiguration.load(
            arguments: ["--http", #"{"maxConnectionsPerAddress": 16, "probeConnections": 0, "maxBufferedBodyBytesPerKey": 2097152, "#
                        + #""firstRequestTimeoutMilliseconds": 1500}"#],
            environment: GatewayConfigurationTests.dev).http
        #expect(lockouts == HTTPConnectionLimits(maxConnectionsPerAddress: 16, probeConnections: 0, maxBufferedBodyBytesPerKey: 2 << 20,
                                                 firstRequestTimeout: .milliseconds(1500)))
    }

    @Test func checkConfigShowsEveryMemberWithItsDefaults() throws {
        let resolved = try GatewayConfiguration.resolve(arguments: ["--dev", "--http", #"{"maxConnectionsPerAddress": 16}"#], environment: [:])
        let http = try #require(resolved.report.entries.first { $0.name == "http" })
        #expect(http.source == "flag --http")
        #expect(http.value == "{maxConnections: 1024, maxConnectionsPerAddress: 16, probeConnections: 16, maxBufferedBodyBytes: 67108864, "
            + "maxBufferedBodyBytesPerKey: 16777216, firstRequestTimeout: 5 s, headTimeout: 10 s, bodyTimeout: 30 s, idleTimeout: 60 s, "
            + "writeTimeout: 30 s}", "\(http.value)")
    }

    @Test func badMembersAreNamed() {
        #expect(problems(["--http", #"{"maxConections": 10}"#]).map(\.message)
            == [#"HTTP settings has unknown key 'maxConections' (did you mean 'maxConnections'?)"#])
        #expect(problems(["--http", #"{"maxConnections": 0}"#]).map(\.message)
            == ["HTTP settings member maxConnections must be a whole number from 1 to 1000000"])
        #expect(problems(["--http", #"{"headTimeoutMilliseconds": "10s"}"#]).map(\.message)
            == ["HTTP settings member headTimeoutMilliseconds must be a whole number from 1 to 3600000"])
        #expect(problems(["--http", #"{"maxConnectionPerAddress": 10}"#]).map(\.message)
            == [#"HTTP settings has unknown key 'maxConnectionPerAddress' (did you mean 'maxConnectionsPerAddress'?)"#])
        #expect(problems(["--http", #"{"maxConnectionsPerAddress": 0}"#]).map(\.message)
            == ["HTTP settings member maxConnectionsPerAddress must be a whole number from 1 to 1000000"])
        #expect(problems(["--http", #"{"probeConnections": -1}"#]).map(\.message)
            == ["HTTP settings member probeConnections must be a whole number from 0 to 10000"])
        #expect(problems(["--http", #"{"firstRequestTimeoutMilliseconds": 0}"#]).map(\.message)
            == ["HTTP settings member firstRequestTimeoutMilliseconds must be a whole number from 1 to 3600000"])
    }

    @Test func theBodyBudgetAndEachKeysShareMustHoldOneBodyAtTheLimit() {
        #expect(problems(["--dev", "--max-body-bytes", "2097152", "--http", #"{"maxBufferedBodyBytes": 1048576}"#]).map(\.message)
            == ["http.maxBufferedBodyBytes (1048576) must be at least maxBodyBytes (2097152), or a body at the limit could never be accepted"])
        #expect(problems(["--dev", "--max-body-bytes", "2097152", "--http", #"{"maxBufferedBodyBytesPerKey": 1048576}"#]).map(\.message)
            == ["http.maxBufferedBodyBytesPerKey (1048576) must be at least maxBodyBytes (2097152), or a body at the limit could never be accepted"])
    }
}
