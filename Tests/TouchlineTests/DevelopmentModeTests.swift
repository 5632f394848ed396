import APNs
import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineChannels
import TouchlineCore

/// Development mode is explicit: without Apple credentials the gateway refuses to start, and in
/// development mode every place an operator looks says `mock`.
@Suite(.heavy) struct DevelopmentModeTests {
    /// `touchline` with `arguments` to its end, in an environment of its own (`PATH` and `environment`).
    static func run(_ arguments: [String], environment: [String: String] = [:], stopAfter: Duration? = nil) async throws -> (Int32, String) {
        try await ServeProcess.runToEnd(arguments, environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }, stopAfter: stopAfter)
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func serveWithoutCredentialsRefusesToStartNamingDevelopmentMode() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // As the container starts without its secrets: every interface, a data directory, no key.
        let (status, text) = try await Self.run(["serve"], environment: ["TOUCHLINE_LISTEN": "0.0.0.0:0", "TOUCHLINE_DATA_DIR": directory])
        #expect(status == 64, "\(text)")
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2, "a heading and one line: \(text)")
        #expect(lines.last?.contains("no APNs credentials") == true && lines.last?.contains("TOUCHLINE_DEV=1") == true, "\(text)")
        #expect(!text.contains("generated development admin key"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "nothing was started or written")
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func serveInDevelopmentModeSaysSoAndGeneratesAKey() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, text) = try await Self.run(["serve", "--listen", "127.0.0.1:0", "--data-dir", directory],
                                                environment: ["TOUCHLINE_DEV": "1"], stopAfter: .seconds(2))
        #expect(status == 0, "\(text)")
        #expect(text.contains("development mode: pushes go to the bundled mock APNs"), "\(text)")
        #expect(text.contains("generated development admin key"))
        #expect(!text.contains("beyond this machine"), "loopback needs no second warning")
    }

    @Test func aGatewayBuiltInCodeWithoutCredentialsRefusesToStart() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gateway = Gateway(configuration: GatewayConfiguration(listenPort: 0, dataDirectory: directory,
                                                                  apiKeys: [.init(key: GatewayFixture.adminKey, scope: .admin)]))
        let error = #expect(throws: GatewayError.self) { try gateway.start() }
        #expect(error?.description.contains("no APNs credentials") == true)
        #expect(gateway.bundledMockAPNs == nil)
    }

    @Test func readinessStatsMetricsShowTheMockInDevelopmentMode() async throws {
        let fixture = try GatewayFixture()
        let ready = try fixture.admin.request("GET", "/readyz")
        #expect(ready.json?.string("apnsMode") == "mock", "\(ready.text)")
        let stats = try fixture.admin.request("GET", "/v1/stats")
        #expect(stats.json?[member: "apns"]?.string("mode") == "mock", "\(stats.text)")
        let metrics = try fixture.admin.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_apns_mode{mode="mock"} 1"#), "\(metrics.prefix(400))")
        #expect(metrics.contains(#"touchline_apns_mode{mode="apple"} 0"#))
        await fixture.shutDown()
    }

    @Test func withCredentialsEveryPlaceSaysApple() async throws {
        let apns = try MockAPNsFixture()
        let fixture = try GatewayFixture(apns: apns.gatewaySettings)
        #expect(fixture.gateway.bundledMockAPNs == nil)
        #expect(try fixture.admin.request("GET", "/readyz").json?.string("apnsMode") == "apple")
        #expect(try fixture.admin.request("GET", "/v1/stats").json?[member: "apns"]?.string("mode") == "apple")
        #expect(try fixture.admin.request("GET", "/metrics").text.contains(#"touchline_apns_mode{mode="apple"} 1"#))
        await fixture.shutDown()
        await apns.shutDown()
    }
}
