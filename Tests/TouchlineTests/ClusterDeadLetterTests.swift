import Foundation
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Dead letters of a cluster's shared jobs: kept by the gateway that sent, with a copy of the
/// job's definition (its file's dead-letter rows refer to the job, and a replay reads the
/// original's payload from it), listed and replayed through it. Without the copy a slice's save
/// with a dead letter failed on the file's foreign key, again and again: the job never finished.
/// One gateway in process on the in-memory cluster and APNs (which refuses the bad tokens as the
/// mock refuses tokens it disowned); two, each holding some letters, on a real 3-node cluster
/// against the strict mock.
@Suite("Dead letters on a cluster", .gatewaysInProcess)
struct ClusterDeadLetterTests {
    @Test func aSharedJobsDeadLettersAreReplayedThroughTheGatewayThatSentThem() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let api = try cluster.add(["g1"])[0].patientAdmin
        for n in 0..<2 { try GatewayDeadLetterTests.register(GatewayDeadLetterTests.badToken(n), follows: "team:ARS", user: "bad-\(n)", on: api) }
        let disowned = Set((0..<2).map(GatewayDeadLetterTests.badToken))
        try #require(cluster.apns(of: "g1")?.personal).script { request in
            guard case .push(let push) = request, disowned.contains(push.deviceToken) else { return nil }
            return .failure(InMemoryAPNs.rejection(status: 400, reason: "BadDeviceToken", endpoint: .device))
        }
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

    /// A bad token for each first hex digit: one in each of a job's 16 slices.
    static func badTokens() -> [String] {
        (0..<16).map { String(format: "%x", $0) + String(repeating: "e", count: 55) + String(format: "%08x", $0) }
    }

    /// Two gateways ran the slices, so each holds some of the job's dead letters: either lists
    /// them all (page by page, each once, marked with the gateway holding it), and a replay
    /// naming that gateway goes through it.
    @Test(.heavy(weight: 3)) func everyGatewaysDeadLettersAreListedAndReplayedThroughAnyGateway() async throws {
        let cluster = try await ClusterUnderTest.start(.servers)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns)
        let bad = Self.badTokens()
        for (n, token) in bad.enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "bad-\(n)", on: gateways[0].patientAdmin)
            apns.mock.disown(token: token)
        }
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: gateways[0].patientAdmin)
        #expect(job.progress?[member: "failed"] == .object([.init("BadDeviceToken", .integer(16))]), "\(String(describing: job.progress))")

        var listed: [JSONValue] = []
        var after: String?
        for _ in 0..<10 {
            let page = try gateways[1].patientAdmin.request("GET", "/v1/deadletters?limit=5" + (after.map { "&after=\($0)" } ?? ""))
            #expect(page.status == 200, "\(page.text)")
            listed += GatewayDeadLetterTests.letters(page)
            guard let next = page.json?.string("next") else { break }
            after = next
        }
        #expect(Set(listed.compactMap { $0.string("token") }) == Set(bad) && listed.count == 16, "each letter once: \(listed.count)")
        let holders = Dictionary(grouping: listed) { $0.string("gateway") ?? "?" }
        #expect(Set(holders.keys) == ["g1", "g2"], "both gateways hold some: \(holders.mapValues(\.count))")

        // g2's letters, replayed through g1 by naming g2.
        let ofG2 = try #require(holders["g2"]).compactMap { $0.integer("id") }
        let replay = try gateways[0].patientAdmin.request("POST", "/v1/deadletters/replay",
                                                          json: #"{"gateway": "g2", "ids": [\#(ofG2.map(String.init).joined(separator: ","))]}"#)
        #expect(replay.status == 202 && replay.json?.integer("replayed") == Int64(ofG2.count), "\(replay.text)")
        let replayed = GatewayDeadLetterTests.letters(try gateways[0].patientAdmin.request("GET", "/v1/deadletters?status=replayed"))
        #expect(Set(replayed.compactMap { $0.integer("id") }) == Set(ofG2) && replayed.allSatisfy { $0.string("gateway") == "g2" })
        let unknown = try gateways[0].patientAdmin.request("POST", "/v1/deadletters/replay", json: #"{"gateway": "g9", "ids": [1]}"#)
        #expect(unknown.status == 400 && unknown.text.contains("g9"), "\(unknown.text)")
    }
}
