import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// A shadow channel runs a live feed through the whole gateway (validation, reducer, engine,
/// store) and shows the pushes it would make, while APNs is never asked for anything: no
/// channel created, no push, no deletion; across a restart, and with its feed recorded for
/// replay. The quotas, answered by the API alone, run in process on the in-memory backends.
@Suite("Shadow channels", .gatewaysInProcess)
struct GatewayShadowChannelTests {
    @Test(.heavy) func aShadowChannelComputesAndShowsItsPushesWithoutEverAskingAPNs() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let first = try GatewayFixture(directory: directory)
        var api = first.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "club-trial", "storagePolicy": "no-storage", "shadow": true, "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(created.status == 201, "\(created.text)")
        let channel = try #require(created.json)
        #expect(channel[member: "shadow"] == .bool(true) && channel[member: "recordFeed"] == .bool(true), "records its feed by default: \(channel)")
        #expect(channel.string("apnsChannelId") == "shadow:club-trial")
        #expect(try api.request("POST", "/v1/channels/club-trial/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/club-trial/events", json: #"{"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 3}"#).status == 202)

        var pushes: [JSONValue] = []
        try await eventually("both pushes accepted in APNs' place") {
            guard case .array(let recent)? = try? api.request("GET", "/v1/channels/club-trial/stats").json?[member: "recentPushes"] else { return false }
            pushes = recent
            return recent.count == 2 && recent.allSatisfy { $0.string("outcome") == "shadow" }
        }
        let goal = try #require(pushes.last)
        #expect(goal[member: "priority"] == .integer(10), "\(goal)")
        #expect(goal[member: "payload"]?[member: "aps"]?[member: "content-state"]?[member: "homeScore"] == .integer(1), "the push is shown whole: \(goal)")

        // Nothing to start activities into; the same create asked without shadow is a conflict.
        let kickoff = try api.request("POST", "/v1/channels/club-trial/start", json: #"{"audience": {"follows": "team:ARS"}, "attributesType": "MatchAttributes", "attributes": {}, "contentState": {}}"#)
        #expect(kickoff.status == 409 && kickoff.errorCode == "shadow_channel", "\(kickoff.text)")
        let differing = try api.request("POST", "/v1/channels", json: #"{"id": "club-trial", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(differing.status == 409 && differing.text.contains("shadow mode"), "\(differing.text)")

        // After a restart it is still a shadow channel, and goes on without APNs.
        Self.expectNothingAsked(of: first.mock)
        await first.shutDown(removingData: false)
        let fixture = try GatewayFixture(directory: directory)
        defer { Task { await fixture.shutDown() } }
        api = fixture.admin
        #expect(try api.request("GET", "/v1/channels/club-trial").json?[member: "shadow"] == .bool(true))
        #expect(try api.request("POST", "/v1/channels/club-trial/events", json: #"{"seq": 3, "type": "goal", "team": "away", "minute": 9}"#).status == 202)
        try await eventually("the third push accepted in APNs' place") {
            guard case .array(let recent)? = try? api.request("GET", "/v1/channels/club-trial/stats").json?[member: "recentPushes"] else { return false }
            return recent.last?.string("outcome") == "shadow" && recent.last?[member: "payload"]?[member: "aps"]?[member: "content-state"]?[member: "awayScore"] == .integer(1)
        }
        let export = try api.request("GET", "/v1/channels/club-trial/events/export")
        #expect(export.status == 200 && export.text.split(separator: "\n").count == 4, "header and three events: \(export.text)")
        #expect(try api.request("DELETE", "/v1/channels/club-trial").status == 200)

        Self.expectNothingAsked(of: fixture.mock)
    }

    static func expectNothingAsked(of mock: MockAPNsServer, sourceLocation: SourceLocation = #_sourceLocation) {
        let counters = mock.counters()
        for endpoint in [MockAPNsEndpoint.createChannel, .broadcast, .deleteChannel, .device] {
            #expect(counters.count(endpoint: endpoint) == 0, "APNs was asked for \(endpoint)", sourceLocation: sourceLocation)
        }
    }

    /// Shadow channels need no APNs channel, so Apple's limit does not bound them: the gateway
    /// does, per key (the key whose prefix covers the channel) and in all, with a named 409 each;
    /// a deleted shadow channel frees its place.
    @Test func shadowChannelsHaveAQuotaPerKeyAndPerGateway() async throws {
        let fixture = try GatewayFixture(tier: .inProcess) { configuration in
            configuration.recordings.maxShadowChannelsPerKey = 2
            configuration.recordings.maxShadowChannels = 3
        }
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let club = fixture.client(key: GatewayFixture.clubKey)
        func shadow(_ id: String, through client: GatewayTestClient) throws -> GatewayTestClient.Response {
            try client.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage", "shadow": true}"#)
        }
        #expect(try shadow("club-s1", through: club).status == 201)
        #expect(try shadow("club-s2", through: api).status == 201, "created by the admin key, it counts against club-'s")
        let overKey = try shadow("club-s3", through: club)
        #expect(overKey.status == 409 && overKey.errorCode == "shadow_channel_quota_exceeded", "\(overKey.text)")
        #expect(overKey.text.contains("'club-'") && overKey.text.contains("recordings.maxShadowChannelsPerKey"), "\(overKey.text)")
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-live", "storagePolicy": "no-storage"}"#).status == 201,
                "other channels are not shadow channels")
        #expect(try shadow("ops-s1", through: api).status == 201)
        let overGateway = try shadow("ops-s2", through: api)
        #expect(overGateway.status == 409 && overGateway.errorCode == "gateway_shadow_channel_quota_exceeded", "\(overGateway.text)")
        #expect(try shadow("club-s1", through: club).status == 200, "a repeated create of an existing one is no new channel")

        #expect(try club.request("DELETE", "/v1/channels/club-s1").status == 200)
        #expect(try shadow("club-s3", through: club).status == 201)
        let metrics = try api.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"touchline_shadow_channels{key="club-"}"#) == 2)
        #expect(metricValue(metrics, #"touchline_recording_quota_used_ratio{resource="shadow_channels",quota="gateway"}"#) == 1)
        #expect(metricValue(metrics, #"touchline_recording_quota_refusals_total{reason="shadow_channel_quota_exceeded"}"#) == 1)
        #expect(metricValue(metrics, #"touchline_recording_quota_refusals_total{reason="gateway_shadow_channel_quota_exceeded"}"#) == 1)
    }
}
