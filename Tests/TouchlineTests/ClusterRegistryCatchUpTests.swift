import Foundation
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// A new gateway joining a cluster builds its copy of the token registry from the whole log, in
/// the background: it serves its channels at once and answers the token routes 503 until its
/// copy has caught up; a job it accepts meanwhile asks its slices for copies at least as far as
/// the log went when it started, so no fan registered before it started is missed. On the
/// in-memory cluster against the strict mock: the copy's time to catch up is the gateway's own
/// applying of the 60,000 registrations.
@Suite("Registry catch-up on a new gateway", .heavy)
struct ClusterRegistryCatchUpTests {
    /// Registers `tokens` following `follow` through `api`, a thousand at a time.
    static func register(_ tokens: [String], following follow: String, through api: GatewayTestClient) throws {
        for start in stride(from: 0, to: tokens.count, by: 1_000) {
            let items = tokens[start..<min(start + 1_000, tokens.count)].map {
                #"{"token": "\#($0)", "kind": "push-to-start", "follows": ["\#(follow)"]}"#
            }
            let registered = try api.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(items.joined(separator: ","))]}"#)
            guard registered.status == 201 else { throw ClusterPersonalJobTests.Failure("registering tokens: \(registered.status) \(registered.text)") }
        }
    }

    @Test func aNewGatewayServesAtOnceWhileItsCopyIsBuiltAndMissesNoFan() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let first = started.add([try ClusterGatewayTests.gateway("g1", cluster: cluster, apns: apns) { configuration in
            configuration.maxBodyBytes = 1 << 20
            configuration.http.maxBufferedBodyBytes = max(configuration.http.maxBufferedBodyBytes, 1 << 20)
        }])[0]
        // A long log, then the fans at its very end: a copy that is not caught up lacks them.
        // Long enough (60,000 registrations, several seconds to apply) for the copy to be seen building.
        let all = ClusterPersonalJobTests.tokens(60_064)
        let (filler, fans) = (Array(all.prefix(60_000)), Array(all.suffix(64)))
        try Self.register(filler, following: "team:XXX", through: first.patientAdmin)
        try Self.register(fans, following: "team:ARS", through: first.patientAdmin)

        let second = started.add([try ClusterGatewayTests.gateway("g2", cluster: cluster, apns: apns)])[0]
        // Accepted by the gateway whose copy is still being built: its slices, wherever they run,
        // must still reach the fans registered before it started.
        let created = try second.patientAdmin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        // While its copy is built, g2 refuses the token routes and says so in /readyz.
        var refusedWhileBuilding = false
        try await eventually("g2's copy caught up", timeout: .seconds(120)) {
            let ready = try? second.patientAdmin.request("GET", "/readyz").json?[member: "cluster"]?[member: "registry"]
            if ready?[member: "caughtUp"] == .bool(true) { return true }
            if let answer = try? second.patientAdmin.request("GET", "/v1/tokens?userId=nobody"), answer.status == 503 {
                refusedWhileBuilding = refusedWhileBuilding || answer.errorCode == "registry_catching_up"
            }
            return false
        }
        #expect(refusedWhileBuilding, "the token routes answered 503 registry_catching_up while the copy was built")
        #expect(try second.patientAdmin.request("GET", "/v1/tokens?userId=nobody").status == 200)
        let progress = try await GatewayDeadLetterTests.finished(jobID, on: first.patientAdmin)
        #expect(progress?.integer("targeted") == 64 && progress?.integer("sent") == 64, "\(String(describing: progress))")
        // Every fan reached. (Partitions move to g2 while the job runs, so a slice resumed on the
        // other gateway may send again what was still out when it moved: not counted here.)
        let starts = apns.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }.compactMap(\.deviceToken)
        #expect(Set(starts) == Set(fans), "every fan: \(Set(starts).count) of \(fans.count)")
        try await eventually("both gateways serve their share") { ClusterPersonalJobTests.everyGatewayServes([first.patientAdmin, second.patientAdmin]) }
    }
}
