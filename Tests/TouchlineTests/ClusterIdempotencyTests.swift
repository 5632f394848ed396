import Foundation
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// `Idempotency-Key` on a cluster: a retry of a personal job's request sent to another gateway
/// (as a load balancer does after a lost 202) gets the first answer, and the audience gets one
/// fan-out, not two. In process on the in-memory cluster and APNs (the job bucket's watch is the
/// cluster's contract, held by the servers too).
@Suite("Idempotency keys on a cluster", .gatewaysInProcess)
struct ClusterIdempotencyTests {
    @Test func aRepeatSentToAnotherGatewayGetsTheFirstAnswerAndRunsNothing() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateways = try cluster.add(["g1", "g2"])
        let fans = (0..<3).map(GatewayPersonalAPITests.token)
        for (n, token) in fans.enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: gateways[0].patientAdmin)
        }
        try await eventually("g2's copy of the registry to hold the fans") {
            (try? gateways[1].patientAdmin.request("GET", "/v1/tokens?userId=fan-2").text.contains(fans[2])) == true
        }
        let key = GatewayIdempotencyTests.key("retry-1")
        let first = try gateways[0].patientAdmin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody, headers: key)
        #expect(first.status == 202 && first.header("Idempotent-Replayed") == nil, "\(first.text)")
        let jobID = try #require(first.json?.string("jobId"))
        // The repeat reaches g2 once g2's watch of the job bucket has the job (moments later).
        var repeated: GatewayTestClient.Response?
        try await eventually("g2 to answer the repeat from the bucket") {
            repeated = try? gateways[1].patientAdmin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody, headers: key)
            return repeated?.header("Idempotent-Replayed") == "true"
        }
        #expect(repeated?.status == 202 && repeated?.json?.string("jobId") == jobID, "\(repeated?.text ?? "")")
        let reused = try gateways[1].patientAdmin.request("POST", "/v1/personal",
                                                          json: GatewayPersonalAPITests.startBody.replacingOccurrences(of: "Kick-off", with: "Half-time"),
                                                          headers: key)
        #expect(reused.status == 422 && reused.errorCode == "idempotency_key_reused", "\(reused.text)")
        _ = try await GatewayDeadLetterTests.finished(jobID, on: gateways[1].patientAdmin)
        // One fan-out: each fan got one start.
        try await Task.sleep(for: .milliseconds(500))
        let starts = cluster.pushedTokens
        #expect(starts.count == fans.count && Set(starts) == Set(fans), "\(starts.count) starts")
    }
}
