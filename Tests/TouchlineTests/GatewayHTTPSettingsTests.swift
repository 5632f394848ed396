import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineRuntime

/// `http`: the provider API's connection cap, body budget and deadlines, from any source,
/// checked member by member.
@Suite(.heavy) struct GatewayHTTPSettingsTests {
    @Test func theDefaultsAndEachSource() throws {
        #expect(try GatewayConfiguration.load(arguments: [], environment: GatewayConfigurationTests.dev).http == HTTPConnectionLimits())
        let defaults = HTTPConnectionLimits()
        #expect(defaults.maxConnections == 1024 && defaults.maxBufferedBodyBytes == 64 << 20)
        #expect(defaults.headTimeout == .seconds(10) && defaults.bodyTimeout == .seconds(30))
        #expect(defaults.idleTimeout == .seconds(60) && defaults.writeTimeout == .seconds(30))

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
    }

    @Test func badMembersAreNamed() {
        #expect(problems(["--http", #"{"maxConections": 10}"#]).map(\.message)
            == [#"HTTP settings has unknown key 'maxConections' (did you mean 'maxConnections'?)"#])
        #expect(problems(["--http", #"{"maxConnections": 0}"#]).map(\.message)
            == ["HTTP settings member maxConnections must be a whole number from 1 to 1000000"])
        #expect(problems(["--http", #"{"headTimeoutMilliseconds": "10s"}"#]).map(\.message)
            == ["HTTP settings member headTimeoutMilliseconds must be a whole number from 1 to 3600000"])
    }

    @Test func theBodyBudgetMustHoldOneBodyAtTheLimit() {
        #expect(problems(["--dev", "--max-body-bytes", "2097152", "--http", #"{"maxBufferedBodyBytes": 1048576}"#]).map(\.message)
            == ["http.maxBufferedBodyBytes (1048576) must be at least maxBodyBytes (2097152), or a body at the limit could never be accepted"])
    }
}
