import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// `touchline serve` killed with SIGKILL loses nothing it acknowledged.
@Suite("Gateway crash recovery", .heavy)
struct GatewayCrashRecoveryTests {
    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func acknowledgedEventsSurviveKillNine() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await ServeProcess(dataDirectory: directory)
        let api = GatewayTestClient(port: first.port, key: GatewayFixture.adminKey)
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "k9", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        for seq in 1...50 {
            let posted = try api.request("POST", "/v1/channels/k9/events", json: #"{"seq": \#(seq), "patch": {"minute": \#(seq)}}"#)
            #expect(posted.status == 202)
        }
        first.kill9()

        let second = try await ServeProcess(dataDirectory: directory)
        let shown = try GatewayTestClient(port: second.port, key: GatewayFixture.adminKey).request("GET", "/v1/channels/k9")
        #expect(shown.status == 200)
        #expect(shown.json?.string("apnsChannelId") == apnsID)
        #expect(shown.json?.integer("lastSeq") == 50)
        #expect(shown.json?[member: "contentState"] == ["minute": 50])
        #expect(second.terminate() == 0)
    }
}
