import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineJetStream
import TouchlineTesting

/// Every stream of a cluster has a limit of its own (`store.limits`): a partition log whose
/// state outgrows it refuses its own partition's writes (503 naming the reason) while every
/// other partition carries on, raising the limit lets it write again, and `/metrics` shows each
/// stream against its limit.
@Suite("Cluster storage limits", .gatewaysInProcess)
struct ClusterStorageLimitTests {
    static let partitionLogBytes = 32_768

    static func limited(_ bytes: Int) -> (inout GatewayConfiguration) -> Void {
        { configuration in configuration.store.jetStream?.limits.partitionLogBytes = bytes }
    }

    @Test func aFullPartitionLogRefusesOnlyItsOwnWritesAndARaisedLimitLetsItWriteAgain() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateway = try await cluster.serving(["g1"], configure: Self.limited(Self.partitionLogBytes))[0]
        let api = gateway.patientAdmin
        let partitioning = ChannelPartitioning(count: ClusterGatewayTests.partitions)!
        let candidates = (1...64).map { "match-\($0)" }
        let full = partitioning.partition(of: candidates[0])
        // Three channels of one partition, and one of another.
        let crowded = Array(candidates.filter { partitioning.partition(of: $0) == full }.prefix(3))
        let elsewhere = try #require(candidates.first { partitioning.partition(of: $0) != full })
        try #require(crowded.count == 3)
        try await ClusterGatewayTests.create(crowded + [elsewhere], through: [api])
        let logStream = "TOUCHLINE_LOG_\(full)"
        let client = InMemoryJetStream(cluster.cluster.connect(name: "observer"))

        // A long match: snapshots trim the log as it goes, but the partition's state (each
        // channel's events) grows until the snapshot, twice during its write, no longer fits.
        let text = String(repeating: "a", count: 500)
        var refusal: GatewayTestClient.Response?
        var trimmedBeforeFull = false
        for seq in 1...1_000 where refusal == nil {
            let answer = try api.request("POST", "/v1/channels/\(crowded[seq % 3])/events",
                                         json: #"{"seq": \#(seq), "patch": {"minute": \#(seq), "commentary": "\#(text)"}}"#)
            if answer.status != 202 { refusal = answer }
            if try client.streamState(logStream).map({ $0.firstSequence > 1 }) == true { trimmedBeforeFull = true }
        }
        let refused = try #require(refusal, "1,000 events all fitted in a log of \(Self.partitionLogBytes) bytes")
        #expect(trimmedBeforeFull, "the log was trimmed below a snapshot before it filled")
        #expect(refused.status == 503 && refused.text.contains("partition \(full) is full (store.limits)"), "\(refused.text)")
        #expect(try client.streamState(logStream).map { $0.bytes <= UInt64(Self.partitionLogBytes) } == true)
        // Every other partition carries on.
        for seq in 1...5 {
            let answer = try api.request("POST", "/v1/channels/\(elsewhere)/events", json: #"{"seq": \#(seq), "patch": {"minute": \#(seq)}}"#)
            #expect(answer.status == 202, "\(elsewhere) seq \(seq): \(answer.text)")
        }
        let metrics = try api.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"touchline_cluster_stream_limit_bytes{instance="g1",stream="\#(logStream)"}"#) == Double(Self.partitionLogBytes),
                "\(metrics)")
        #expect(metricValue(metrics, #"touchline_cluster_stream_limit_bytes{instance="g1",stream="KV_touchline_jobs"}"#) == Double(256 << 20))
        #expect(metricValue(metrics, #"touchline_cluster_stream_bytes{instance="g1",stream="\#(logStream)"}"#) != nil, "\(metrics)")

        // A gateway started with a larger limit gives the log room again.
        await gateway.shutDown()
        let raised = try cluster.add(["g2"], configure: Self.limited(4 * Self.partitionLogBytes))[0]
        try await eventually("\(crowded[0]) takes events again") {
            (try? raised.patientAdmin.request("POST", "/v1/channels/\(crowded[0])/events",
                                             json: #"{"seq": 401, "patch": {"minute": 401, "commentary": "\#(text)"}}"#))?.status == 202
        }
    }

    /// A finished job stays a retention long, then leaves the bucket, the API and every
    /// gateway's memory.
    @Test func aFinishedJobExpiresFromTheBucketTheAPIAndEveryGateway() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateways = try await cluster.serving { $0.store.jetStream?.finishedJobRetention = .seconds(2) }
        for (n, token) in (0..<3).map(GatewayPersonalAPITests.token).enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: gateways[n % 2].patientAdmin)
        }
        try await ClusterPersonalJobTests.copiesAgree(gateways.map(\.patientAdmin))
        let created = try gateways[1].patientAdmin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        // The job's status is not waited for: with a 2 s retention, a loaded run can pass the
        // whole of it between two polls (CI once did, and waited for a job already gone). Its
        // pushes show it ran.
        try await eventually("the job's three pushes") { cluster.journal.pushes.count >= 3 }
        #expect(cluster.journal.pushes.count == 3, "each fan once")
        let client = InMemoryJetStream(cluster.cluster.connect(name: "observer"))

        try await eventually("the job to leave the API of both gateways") {
            try gateways.allSatisfy { try $0.patientAdmin.request("GET", "/v1/personal/\(jobID)").status == 404 }
        }
        try await eventually("the job's keys to be purged from the bucket") {
            try client.messageCount(stream: "KV_touchline_jobs", subject: "$KV.touchline_jobs.*.\(jobID)") == 0
                && client.messageCount(stream: "KV_touchline_jobs", subject: "$KV.touchline_jobs.slice.\(jobID).>") == 0
        }
    }

    /// The token registry's log is compacted by the gateway holding partition 0 once its copy
    /// is `store.registrySnapshotEntries` past the newest snapshot, and trimmed below the one
    /// before; a gateway that joins later is restored from the snapshot and reaches every token.
    @Test func theRegistryLogIsCompactedAndAGatewayJoiningLaterIsRestoredFromItsSnapshot() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let compactEvery: (inout GatewayConfiguration) -> Void = { $0.store.jetStream?.registrySnapshotEntries = 10 }
        let gateways = try await cluster.serving(configure: compactEvery)
        let tokens = (0..<36).map(GatewayPersonalAPITests.token)
        let client = InMemoryJetStream(cluster.cluster.connect(name: "observer"))
        let layout = RegistryLogLayout()
        for (n, token) in tokens.prefix(18).enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: gateways[n % 2].patientAdmin)
        }
        try await eventually("a first snapshot", timeout: .seconds(20)) {
            try client.messageCount(stream: layout.snapshotStreamName, subject: layout.snapshotMarkerSubject) == 1
        }
        for (n, token) in tokens.dropFirst(18).enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n + 18)", on: gateways[n % 2].patientAdmin)
        }
        try await eventually("the log trimmed below the first snapshot", timeout: .seconds(20)) {
            (try client.streamState(layout.streamName)?.firstSequence ?? 0) > 1
        }
        let joining = try cluster.add(["g3"], configure: compactEvery)[0]
        try await ClusterPersonalJobTests.copiesAgree((gateways + [joining]).map(\.patientAdmin))
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: joining.patientAdmin)
        #expect(job.progress?.integer("targeted") == 36, "every token, those only in the snapshot too")
        #expect(Set(cluster.pushedTokens) == Set(tokens))
        let metrics = try joining.patientAdmin.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_cluster_registry_snapshots_total{instance="g3",outcome="restored"} 1"#), "\(metrics.split(separator: "\n").filter { $0.contains("registry_snapshots") })")
    }
}
