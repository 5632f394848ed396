import APNsMock
import Foundation
import NATSServers
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineChannels
@testable import TouchlineCluster
import TouchlineCore
import TouchlineStore

/// `touchline migrate`: a gateway on SQLite copied into a cluster carries on there: its channels
/// with their APNs ids and states, a recording channel's recorded feed, its tokens as they were,
/// its open jobs.
@Suite("touchline migrate", .heavy(weight: 3))
struct ClusterMigrationTests {
    @Test func aSQLiteGatewaysChannelsTokensAndOpenJobsCarryOnInTheCluster() async throws {
        let apns = try MockAPNsFixture()
        let source = apns.directory + "/sqlite"
        let single = try GatewayFixture(apns: apns.gatewaySettings, directory: source)
        let api = single.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage", "initialState": {"home": 0}}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "rec-1", "storagePolicy": "no-storage", "recordFeed": true}"#).status == 201)
        for seq in 1...3 {
            #expect(try api.request("POST", "/v1/channels/match-1/events", json: #"{"seq": \#(seq), "patch": {"home": \#(seq)}}"#).status == 202)
            #expect(try api.request("POST", "/v1/channels/rec-1/events", json: #"{"seq": \#(seq), "patch": {"minute": \#(seq)}}"#).status == 202)
        }
        let fans = (0..<3).map(GatewayPersonalAPITests.token)
        for (n, token) in fans.enumerated() { try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: api) }
        // fan-0 registers a newer token: the first is deactivated, and must arrive so.
        let replacement = GatewayPersonalAPITests.token(10)
        try GatewayDeadLetterTests.register(replacement, follows: "team:ARS", user: "fan-0", on: api)
        let finished = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: api)
        try await eventually("match-1's last state at APNs") {
            apns.mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.status == 200 && $0.bodyText.contains(#""home":3"#) }
        }
        await single.shutDown(removingData: false)
        // A job the gateway had not run yet when it stopped, stored as it stores one.
        let stored = try #require(try SQLiteTokenReader(path: source + "/personal.sqlite").job(id: finished.id))
        let personal = try StoreWriter(path: source + "/personal.sqlite")
        try await personal.submit([.createJob(PersonalJobRecord(id: "open-1", createdAt: stored.createdAt, audience: stored.audience,
                                                                payload: stored.payload, priority: stored.priority))])
        personal.close()
        let sourceReader = try SQLiteChannelReader(path: source + "/touchline.sqlite")
        let eventsInSource = try ["match-1", "rec-1"].map { try sourceReader.events(channelID: $0, afterSeq: 0, limit: 100).count }.reduce(0, +)
        sourceReader.close()

        let cluster = try await ClusterUnderTest.start(.servers)
        let target = apns.directory + "/g1"
        let settings = JetStreamSettings(servers: cluster.urls, instance: InstanceID("g1")!, partitions: ClusterGatewayTests.partitions)
        let summary = try ClusterMigration(source: source, settings: settings, dataDirectory: target).run()
        #expect(summary == .init(channels: 2, channelsAlreadyThere: 0, events: eventsInSource, tokens: 4, jobs: 1, jobsAlreadyThere: 0), "\(summary)")
        let again = try ClusterMigration(source: source, settings: settings, dataDirectory: target).run()
        #expect(again.channels == 0 && again.channelsAlreadyThere == 2 && again.events == 0 && again.jobs == 0 && again.jobsAlreadyThere == 1,
                "nothing copied twice: \(again)")

        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateway = try started.add([ClusterGatewayTests.gateway("g1", cluster: cluster, apns: apns)])[0].patientAdmin
        // Served once the gateway has taken its partitions up (503 channel_moving until then).
        try await eventually("g1 to serve match-1") { (try? gateway.request("GET", "/v1/channels/match-1").status) == 200 }
        let channel = try gateway.request("GET", "/v1/channels/match-1")
        #expect(channel.json?.string("apnsChannelId") == apnsID && channel.json?.integer("lastSeq") == 3, "\(channel.text)")
        #expect(try gateway.request("POST", "/v1/channels/match-1/events", json: #"{"seq": 3, "patch": {"home": 9}}"#).json?.integer("duplicates") == 1,
                "seq 3 was taken before the move")
        #expect(try gateway.request("POST", "/v1/channels/match-1/events", json: #"{"seq": 4, "patch": {"home": 4}}"#).status == 202)
        try await eventually("the migrated channel's next state at APNs, on its APNs channel") {
            apns.mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.channelID == apnsID && $0.bodyText.contains(#""home":4"#) }
        }
        // The recording carries on in the cluster's recordings, not in the partition's tables.
        try await eventually("g1 to serve rec-1") { (try? gateway.request("GET", "/v1/channels/rec-1").status) == 200 }
        let recorded = try gateway.request("GET", "/v1/channels/rec-1").json
        #expect(recorded?[member: "recording"]?[member: "events"] == .integer(3), "\(String(describing: recorded))")
        let export = try gateway.request("GET", "/v1/channels/rec-1/events/export")
        let seqs = try RecordedFeed(jsonLines: export.body).entries.compactMap { entry -> Int64? in
            if case .event(let event) = entry.input, case .integer(let seq)? = event[member: "seq"] { seq } else { nil }
        }
        #expect(export.status == 200 && seqs == [1, 2, 3], "\(export.text)")
        let tokens = try gateway.request("GET", "/v1/tokens?userId=fan-0").text
        #expect(tokens.contains(fans[0]) && tokens.contains(replacement), "\(tokens)")
        let open = try await GatewayDeadLetterTests.finished("open-1", on: gateway)
        #expect(open?.integer("targeted") == 3, "the active followers only: \(String(describing: open))")
    }

    /// Into a cluster holding its registry partitioned: every token, in the state it had, lands
    /// in its partition's log, and two gateways serve them; a source with an open job is refused
    /// before anything is copied, and a migration set to the shared registry is refused by the
    /// cluster's record.
    @Test func aSQLiteGatewaysTokensLandInThePartitionsOfAPartitionedRegistry() async throws {
        let apns = try MockAPNsFixture()
        let source = apns.directory + "/sqlite"
        let single = try GatewayFixture(apns: apns.gatewaySettings, directory: source)
        let fans = ClusterPersonalJobTests.tokens(12)
        for (n, token) in fans.prefix(11).enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: single.admin)
        }
        // fan-0 registers a newer token: the first is deactivated, and must arrive so.
        try GatewayDeadLetterTests.register(fans[11], follows: "team:ARS", user: "fan-0", on: single.admin)
        await single.shutDown(removingData: false)

        let cluster = try await ClusterUnderTest.start(.servers)
        var settings = JetStreamSettings(servers: cluster.urls, instance: InstanceID("g1")!, partitions: ClusterGatewayTests.partitions)
        settings.registry = .partitioned
        // An open job in the source: refused, nothing copied.
        let personal = try StoreWriter(path: source + "/personal.sqlite")
        try await personal.submit([.createJob(PersonalJobRecord(id: "open-1", createdAt: UnixTime(seconds: 1), audience: #"{"follows": "team:ARS"}"#,
                                                                payload: Array("{}".utf8), priority: 10))])
        let withOpenJob = #expect(throws: (any Error).self) { try ClusterMigration(source: source, settings: settings, dataDirectory: apns.directory + "/g1").run() }
        #expect(String(describing: withOpenJob).contains("holds 1 open personal job"), "\(String(describing: withOpenJob))")
        try await personal.submit([.advanceJob(PersonalJobProgress(jobID: "open-1", cursor: nil, counts: PersonalJobCounts(), status: .done,
                                                                    at: UnixTime(seconds: 2)))])
        personal.close()

        let summary = try ClusterMigration(source: source, settings: settings, dataDirectory: apns.directory + "/g1").run()
        #expect(summary.tokens == 12 && summary.jobs == 0, "\(summary)")
        var shared = settings
        shared.registry = .shared
        let otherLayout = #expect(throws: (any Error).self) { try ClusterMigration(source: source, settings: shared, dataDirectory: apns.directory + "/g9").run() }
        #expect(String(describing: otherLayout).contains("holds its token registry partitioned"), "\(String(describing: otherLayout))")

        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns, configure: ClusterPartitionedRegistryTests.partitioned)
        let (g1, g2) = (gateways[0].patientAdmin, gateways[1].patientAdmin)
        try await eventually("every registry partition served") { ClusterPartitionedRegistryTests.registryServed(by: [g1, g2]) }
        #expect(ClusterPartitionedRegistryTests.listed(try g2.request("GET", "/v1/tokens?userId=fan-0")) == [fans[0]: false, fans[11]: true])
        for n in 1..<11 {
            #expect(ClusterPartitionedRegistryTests.listed(try g1.request("GET", "/v1/tokens?userId=fan-\(n)")) == [fans[n]: true], "fan-\(n)")
        }
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: g1)
        #expect(job.progress?.integer("targeted") == 11 && job.progress?.integer("sent") == 11, "the active fans only: \(String(describing: job.progress))")
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aConfigurationWithoutAClusterIsRefusedNamingTheBackend() async throws {
        let refused = try await ServeProcess.runToEnd(["migrate", "--from", "/nonexistent", "--dev"])
        #expect(refused.status == 64 && refused.output.contains(#"store.backend is "sqlite""#), "\(refused)")
        let missing = try await ServeProcess.runToEnd(["migrate", "--dev"])
        #expect(missing.status == 64 && missing.output.contains("--from is required"), "\(missing)")
    }
}
