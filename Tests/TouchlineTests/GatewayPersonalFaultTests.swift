import Foundation
import MockAPNs
import Testing
import TouchlineCore

/// A personal fan-out through the gateway against a mock that answers a share of requests with
/// 500 `InternalServerError` and 503 `Shutdown`: every target ends sent or dead-lettered after
/// its retries, the counts add up exactly, and no token is accepted twice.
@Suite("Gateway personal pushes under faults")
struct GatewayPersonalFaultTests {
    @Test func everyTargetEndsAndTheCountsAddUp() async throws {
        let apns = try MockAPNsFixture { configuration in
            configuration.faults.internalServerErrorRate = 0.2
            configuration.faults.shutdownRate = 0.1
        }
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        defer { Task { await fixture.shutDown(); apns.mock.stop() } }
        let api = fixture.admin
        let tokens = (0..<30).map(GatewayPersonalAPITests.token)
        for (n, token) in tokens.enumerated() {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(token)", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
        let created = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")

        var progress: JSONValue?
        try await eventually("the job to finish", timeout: .seconds(30)) {
            progress = try? api.request("GET", "/v1/personal/\(jobID)").json
            return progress?.string("status") == "done"
        }
        let sent = try #require(progress?.integer("sent"))
        var failed: Int64 = 0
        if case .object(let reasons)? = progress?[member: "failed"] {
            for reason in reasons {
                #expect(reason.name == "RetriesExhausted", "only retries can run out here, got \(reason.name)")
                if case .integer(let count) = reason.value { failed += count }
            }
        }
        #expect(progress?.integer("targeted") == 30)
        #expect(sent + failed == 30 && progress?.integer("pending") == 0 && progress?.integer("expired") == 0)

        let device = apns.mock.recordedRequests().filter { $0.endpoint == .device }
        let accepted = device.filter { $0.status == 200 }.compactMap(\.deviceToken)
        #expect(accepted.count == Int(sent))
        #expect(Set(accepted).count == accepted.count, "no token was accepted twice")
        #expect(device.count > accepted.count, "the mock did inject faults")
    }
}
