import APNsMock
import Foundation
import NATSServers
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineCluster
import TouchlineCore

/// Several apps on a cluster: a SQLite gateway with two apps migrates into the cluster, and two
/// cluster gateways serve both apps, each app through its own APNs (two mock APNs of different
/// teams, keys and bundle ids).
@Suite("Apps on a cluster", .serialized, .heavy(weight: 3))
struct ClusterAppsTests {
    @Test func twoGatewaysServeEachAppsChannelsAndPersonalPushesThroughItsOwnAPNs() async throws {
        let cluster = try await ClusterUnderTest.start(.servers)
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: GatewayAppsTests.tvIdentity)
        defer { Task { await tv.shutDown() } }
        let apps: (inout GatewayConfiguration) -> Void = { $0.apps = [.init(name: "tv", apns: tv.gatewaySettings)] }

        // A gateway on SQLite with both apps: a tv channel and a tv follower, migrated.
        let source = league.directory + "/sqlite"
        let single = try GatewayFixture(apns: league.gatewaySettings, directory: source, configure: apps)
        #expect(try single.admin.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#).status == 201)
        let fan = String(repeating: "b8", count: 32)
        #expect(try single.admin.request("POST", "/v1/apps/tv/tokens", json: #"{"token": "\#(fan)", "kind": "push-to-start", "follows": ["team:ARS"]}"#).status == 201)
        await single.shutDown(removingData: false)
        let settings = JetStreamSettings(servers: cluster.urls, instance: InstanceID("g1")!, partitions: ClusterGatewayTests.partitions)
        let summary = try ClusterMigration(source: source, settings: settings, dataDirectory: league.directory + "/g1").run()
        #expect(summary.channels == 1 && summary.tokens == 1, "\(summary)")

        let started = StartedGateways()
        defer { started.shutDown(after: league, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: league, configure: apps)
        // Either gateway lists tv's channels (the migrated one among them) and none of default's.
        for (index, id) in ["match-2", "match-3"].enumerated() {
            let created = try gateways[index].patientAdmin.request("POST", "/v1/apps/tv/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#)
            #expect(created.status == 201 && created.json?.string("app") == "tv", "\(created.text)")
        }
        #expect(try gateways[0].patientAdmin.request("POST", "/v1/channels", json: #"{"id": "club-1", "storagePolicy": "no-storage"}"#).status == 201)
        for gateway in gateways {
            let listed = try gateway.patientAdmin.request("GET", "/v1/apps/tv/channels")
            #expect(GatewayAppsTests.listedIDs(listed) == ["match-1", "match-2", "match-3"], "\(listed.text)")
        }
        // Goals through the gateway that does not own the channel: each at its app's APNs.
        for (index, id) in ["match-1", "match-2", "match-3"].enumerated() {
            let posted = try gateways[(index + 1) % 2].patientAdmin.request("POST", "/v1/apps/tv/channels/\(id)/events", json: GatewayAppsTests.goals(40 + index))
            #expect(posted.status == 202, "\(posted.text)")
        }
        #expect(try gateways[1].patientAdmin.request("POST", "/v1/channels/club-1/events", json: GatewayAppsTests.goals(50)).status == 202)
        try await eventually("every goal at its app's APNs") {
            (40...42).allSatisfy { !GatewayKeyRotationTests.keysOfBroadcasts(minute: $0, in: tv.mock).isEmpty }
                && !GatewayKeyRotationTests.keysOfBroadcasts(minute: 50, in: league.mock).isEmpty
        }
        #expect((40...42).allSatisfy { GatewayKeyRotationTests.keysOfBroadcasts(minute: $0, in: league.mock).isEmpty })

        // A tv job through either gateway reaches the migrated tv follower, through tv's APNs.
        let job = try gateways[1].patientAdmin.request("POST", "/v1/apps/tv/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(job.json?.string("jobId"), "\(job.text)")
        try await eventually("the tv job done") {
            (try? gateways[0].patientAdmin.request("GET", "/v1/apps/tv/personal/\(jobID)").json?.string("status")) == "done"
        }
        let starts = tv.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(starts.map(\.deviceToken) == [fan] && starts.allSatisfy { $0.status == 200 }, "\(starts.map { "\($0.status) \($0.detail ?? "")" })")
        #expect(league.mock.recordedRequests().filter { $0.endpoint == .device }.isEmpty)
    }
}
