import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// `POST /v1/channels/{id}/start` against the gateway's bundled mock: the start reaches every
/// push-to-start token following the topic, subscribed to the channel's APNs id. Refusals are
/// checked in process on the in-memory backends.
@Suite("Gateway kickoff start", .gatewaysInProcess)
struct GatewayKickoffTests {
    static let startBody = """
        {"audience": {"follows": "team:ARS"}, "attributesType": "MatchAttributes", "attributes": \(GatewayFixture.matchAttributes),
         "alert": {"title": "Kick-off", "body": "ARS v CHE"}}
        """

    @Test(.heavy) func startReachesThePushToStartFollowersWithTheChannelsAPNsID() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: """
            {"id": "club-match-1", "storagePolicy": "no-storage", "initialState": {"homeScore": 0, "awayScore": 0}}
            """)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        #expect(try api.request("POST", "/v1/channels/club-match-1/events", json: #"{"seq": 1, "patch": {"homeScore": 1}}"#).status == 202)
        let followers = (0..<5).map(GatewayPersonalAPITests.token)
        for (n, token) in followers.enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: api)
        }
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(20), follows: "team:CHE", user: "rival", on: api)
        // An update token following the team is not a push-to-start token: it gets no start.
        #expect(try api.request("POST", "/v1/tokens", json: """
            {"token": "\(GatewayPersonalAPITests.token(21))", "kind": "update", "channelId": "club-match-1", "userId": "fan-0",
             "follows": ["team:ARS"]}
            """).status == 201)

        // A provider key whose prefix covers the channel may start it.
        let provider = GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey)
        let started = try provider.request("POST", "/v1/channels/club-match-1/start", json: Self.startBody)
        #expect(started.status == 202, "\(started.text)")
        let jobID = try #require(started.json?.string("jobId"))
        let progress = try await GatewayDeadLetterTests.finished(jobID, on: api)
        #expect(progress?.integer("targeted") == 5 && progress?.integer("sent") == 5, "\(String(describing: progress))")

        let starts = fixture.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(starts.count == 5 && starts.allSatisfy { $0.status == 200 && $0.event == "start" && $0.priority == 10 })
        #expect(Set(starts.compactMap(\.deviceToken)) == Set(followers))
        #expect(Set(starts.map(\.body)).count == 1, "one payload, encoded once")
        let first = try #require(starts.first)
        let aps = try #require(try JSONParser.parse(first.body)[member: "aps"])
        #expect(aps.string("input-push-channel") == apnsID)
        #expect(aps[member: "content-state"] == ["homeScore": 1, "awayScore": 0], "the channel's current content-state")
        #expect(aps.string("attributes-type") == "MatchAttributes")
        #expect(aps[member: "alert"]?[member: "title"] == "Kick-off")
    }

    @Test func startIsRefusedForUnknownEndedOrForeignChannelsAndBadBodies() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        for id in ["club-over", "other-1"] {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#).status == 201)
        }
        #expect(try api.request("POST", "/v1/channels/club-over/end", json: "{}").status == 202)
        let provider = fixture.client(key: GatewayFixture.clubKey)

        let unknown = try api.request("POST", "/v1/channels/club-nope/start", json: Self.startBody)
        #expect(unknown.status == 404 && unknown.errorCode == "channel_not_found", "\(unknown.text)")
        let ended = try api.request("POST", "/v1/channels/club-over/start", json: Self.startBody)
        #expect(ended.status == 409 && ended.errorCode == "channel_not_active" && ended.text.contains("club-over"), "\(ended.text)")
        let foreign = try provider.request("POST", "/v1/channels/other-1/start", json: Self.startBody)
        #expect(foreign.status == 403 && foreign.errorCode == "forbidden" && foreign.text.contains("club-"), "\(foreign.text)")

        let cases: [(body: String, field: String)] = [
            (#"{"attributesType": "MatchAttributes", "attributes": {}}"#, "audience"),
            (#"{"audience": {"userId": "u1"}, "attributesType": "MatchAttributes", "attributes": {}}"#, "audience.userId"),
            (#"{"audience": {"follows": ""}, "attributesType": "MatchAttributes", "attributes": {}}"#, "audience.follows"),
            (#"{"audience": {"follows": "team:ARS"}, "attributes": {}}"#, "attributesType"),
            (#"{"audience": {"follows": "team:ARS"}, "attributesType": "MatchAttributes"}"#, "attributes"),
            (#"{"audience": {"follows": "team:ARS"}, "attributesType": "M", "attributes": {}, "priority": 1, "alert": {"title": "K", "body": "b"}}"#, "priority"),
            (#"{"audience": {"follows": "team:ARS"}, "attributesType": "M", "attributes": {}}"#, "alert"),
            (#"{"audience": {"follows": "team:ARS"}, "attributesType": "M", "attributes": {}, "alert": {"title": "", "body": "b"}}"#, "alert.title"),
            (#"{"audience": {"follows": "team:\u0000ARS"}, "attributesType": "M", "attributes": {}, "alert": {"title": "K", "body": "b"}}"#, "audience.follows"),
            (#"{"audience": {"follows": "team:ARS"}, "attributesType": "M", "attributes": {}, "event": "update"}"#, "event"),
        ]
        for (body, field) in cases {
            let response = try api.request("POST", "/v1/channels/other-1/start", json: body)
            #expect(response.status == 400 && response.text.contains("'\(field)'"), "\(body) -> \(response.status) \(response.text)")
        }
        #expect(try #require(fixture.inMemory?.apns.personal).requests.isEmpty, "nothing was started")
    }
}
