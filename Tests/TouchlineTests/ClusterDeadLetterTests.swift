import Foundation
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// Dead letters of a cluster's shared jobs: kept by the gateway that sent, with a copy of the
/// job's definition (its file's dead-letter rows refer to the job, and a replay reads the
/// original's payload from it), listed and replayed through it. Without the copy a slice's save
/// with a dead letter failed on the file's foreign key, again and again: the job never finished.
@Suite("Dead letters on a cluster", .heavy(weight: 3))
struct ClusterDeadLetterTests {
    @Test func aSharedJobsDeadLettersAreReplayedThroughTheGatewayThatSentThem() async throws {
        let cluster = try await NATSCluster.start()
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateway = try started.add([try ClusterGatewayTests.gateway("g1", cluster: cluster, apns: apns)])[0]
        let api = gateway.patientAdmin
        for n in 0..<2 { try GatewayDeadLetterTests.register(GatewayDeadLetterTests.badToken(n), follows: "team:ARS", user: "bad-\(n)", on: api) }
        for n in 0..<2 { apns.mock.disown(token: GatewayDeadLetterTests.badToken(n)) }
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: api)
        #expect(job.progress?[member: "failed"] == .object([.init("BadDeviceToken", .integer(2))]), "\(String(describing: job.progress))")
        let ids = GatewayDeadLetterTests.letters(try api.request("GET", "/v1/deadletters")).compactMap { $0.integer("id") }
        #expect(ids.count == 2)
        let replay = try api.request("POST", "/v1/deadletters/replay", json: #"{"ids": [\#(ids.map(String.init).joined(separator: ","))]}"#)
        #expect(replay.status == 202, "\(replay.text)")
        let replayed = GatewayDeadLetterTests.letters(try api.request("GET", "/v1/deadletters?status=replayed"))
        #expect(replayed.count == 2, "\(replayed)")
        // Reported like one gateway's: the dead letters made, and the job's end.
        guard case .array(let events)? = try api.request("GET", "/v1/events").json?[member: "events"] else {
            Issue.record("no events")
            return
        }
        let created = events.filter { $0.string("type") == "personal.deadletters.created" && $0[member: "data"]?.string("jobId") == job.id }
        #expect(created.compactMap { $0[member: "data"]?.integer("count") }.reduce(0, +) == 2, "\(events)")
        #expect(events.contains { $0.string("type") == "personal.job.finished" && $0[member: "data"]?.string("jobId") == job.id })
    }
}
