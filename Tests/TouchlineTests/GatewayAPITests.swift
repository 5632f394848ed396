import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// The provider API end to end: over HTTP against the mock APNs the gateway starts itself (the
/// tests that read what reached APNs, and the HTTP server's own 413), and in process on the
/// in-memory backends for what only the API answers.
@Suite("Gateway API", .gatewaysInProcess)
struct GatewayAPITests {
    /// The `aps` object of a recorded broadcast.
    private func aps(_ request: MockAPNsRecordedRequest) throws -> JSONValue {
        try #require(try JSONParser.parse(request.body)[member: "aps"])
    }

    private func broadcasts(_ mock: MockAPNsServer, to channel: String) -> [MockAPNsRecordedRequest] {
        mock.recordedRequests().filter { $0.endpoint == .broadcast && $0.channelID == channel }
    }

    @Test(.heavy) func createIsIdempotentAndEventsBecomeBroadcasts() async throws {
        let fixture = try GatewayFixture()
        let api = fixture.admin
        let body = #"{"id": "club-ars-che", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#
        let created = try api.request("POST", "/v1/channels", json: body)
        #expect(created.status == 201, "\(created.text)")
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        #expect(created.json?.string("status") == "active")
        #expect(created.json?.string("storagePolicy") == "no-storage")

        let again = try api.request("POST", "/v1/channels", json: body)
        #expect(again.status == 200)
        #expect(again.json?.string("apnsChannelId") == apnsID)
        #expect(fixture.mock.counters().count(endpoint: .createChannel) == 1)

        let events = """
            {"events": [{"seq": 1, "type": "status", "status": "live"},
                        {"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 31}]}
            """
        let posted = try GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey)
            .request("POST", "/v1/channels/club-ars-che/events", json: events)
        #expect(posted.status == 202, "\(posted.text)")
        #expect(posted.json?.integer("accepted") == 2)
        #expect(posted.json?.integer("duplicates") == 0)
        #expect(posted.json?[member: "stale"] == .array([]))

        // One push in flight at a time: the first event goes at once, the goal waits for its answer.
        try await eventually("two broadcasts") { broadcasts(fixture.mock, to: apnsID).count == 2 }
        let sent = broadcasts(fixture.mock, to: apnsID)
        #expect(sent.map(\.status) == [200, 200])
        #expect(sent.map(\.priority) == [5, 10])
        #expect(sent.map { $0.header("apns-expiration") } == ["0", "0"])
        #expect(sent.map(\.event) == ["update", "update"])
        let kickOff = try #require(try aps(sent[0])[member: "content-state"])
        #expect(kickOff.string("status") == "live")
        #expect(kickOff.integer("homeScore") == 0)
        #expect(try aps(sent[0])[member: "alert"] == nil)
        let goal = try #require(try aps(sent[1])[member: "content-state"])
        #expect(goal.integer("homeScore") == 1)
        #expect(goal.integer("awayScore") == 0)
        #expect(try aps(sent[1])[member: "alert"] != nil)

        try await eventually("the push answer to reach the engine") {
            (try? api.request("GET", "/v1/channels/club-ars-che").json?[member: "pushInFlight"]) == .bool(false)
        }
        let shown = try api.request("GET", "/v1/channels/club-ars-che")
        #expect(shown.status == 200)
        #expect(shown.json?.integer("lastSeq") == 2)
        #expect(shown.json?[member: "counters"]?.integer("immediatePushes") == 1)
        let listed = try api.request("GET", "/v1/channels")
        #expect(listed.json?[member: "channels"].map { if case .array(let items) = $0 { items.count } else { 0 } } == 1)
        await fixture.shutDown()
    }

    @Test func aChannelPolicyFillsItsGapsFromTheConfiguredDefaultAndRejectsUnknownMembers() async throws {
        var configured = ChannelPolicy.default
        configured.minimumInterval = .seconds(7)
        let fixture = try GatewayFixture(tier: .inProcess) { $0.defaultPolicy = configured }
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin

        let created = try api.request("POST", "/v1/channels", json: #"{"id": "p1", "storagePolicy": "no-storage", "policy": {"burst": 5}}"#)
        #expect(created.status == 201, "\(created.text)")
        let policy = try #require(created.json.flatMap { $0[member: "policy"] })
        #expect(policy[member: "burst"] == .integer(5))
        #expect(policy[member: "minimumIntervalSeconds"] == .integer(7), "\(created.text)")

        let unknown = try api.request("POST", "/v1/channels", json: #"{"id": "p2", "storagePolicy": "no-storage", "policy": {"brust": 5}}"#)
        #expect(unknown.status == 400)
        #expect(unknown.text.contains("brust"), "\(unknown.text)")
        let invalid = try api.request("POST", "/v1/channels", json: #"{"id": "p3", "storagePolicy": "no-storage", "policy": {"burst": 0}}"#)
        #expect(invalid.status == 400)
        #expect(invalid.text.contains("burst"), "\(invalid.text)")
    }

    @Test func aSportsChannelKeepsAMatchStateThroughPatchesAndEnd() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let body = #"{"id": "club-m1", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#
        #expect(try api.request("POST", "/v1/channels", json: body).status == 201)

        let broken = try api.request("POST", "/v1/channels/club-m1/events", json: #"{"seq": 1, "patch": {"homeScore": "two"}}"#)
        #expect(broken.status == 422 && broken.errorCode == "invalid_state", "\(broken.text)")
        let fine = try api.request("POST", "/v1/channels/club-m1/events", json: #"{"seq": 1, "patch": {"homeScore": 3}}"#)
        #expect(fine.status == 202, "\(fine.text)")
        let goal = try api.request("POST", "/v1/channels/club-m1/events", json: #"{"seq": 2, "type": "goal", "team": "home", "minute": 10}"#)
        #expect(goal.status == 202, "\(goal.text)")
        #expect(try api.request("GET", "/v1/channels/club-m1").json?[member: "contentState"]?[member: "homeScore"] == .integer(4))

        let badEnd = try api.request("POST", "/v1/channels/club-m1/end", json: #"{"finalState": {"winner": "home"}}"#)
        #expect(badEnd.status == 422 && badEnd.errorCode == "invalid_state", "\(badEnd.text)")
        #expect(try api.request("GET", "/v1/channels/club-m1").json?.string("status") == "active")
    }

    @Test func channelListIsPagedByID() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let ids = ["club-a", "club-b", "club-c", "club-d", "club-e"]
        for id in ids.shuffled() {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#).status == 201)
        }
        var seen: [String] = []
        var path = "/v1/channels?limit=2"
        var pages = 0
        while true {
            let page = try api.request("GET", path)
            #expect(page.status == 200, "\(page.text)")
            guard case .array(let channels)? = page.json?[member: "channels"] else { Issue.record("no channels in \(page.text)"); break }
            #expect(channels.count <= 2)
            seen += channels.compactMap { $0[member: "id"].flatMap { if case .string(let id) = $0 { id } else { nil } } }
            pages += 1
            guard case .string(let next)? = page.json?[member: "next"] else { break }
            path = "/v1/channels?limit=2&after=\(next)"
        }
        #expect(seen == ids)
        #expect(pages == 3)
        let bad = try api.request("GET", "/v1/channels?limit=0")
        #expect(bad.status == 400 && bad.errorCode == "invalid_query")
    }

    @Test func duplicatesAreIgnoredStaleReportedAndABadBatchChangesNothing() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "g1", "storagePolicy": "most-recent"}"#).status == 201)
        let path = "/v1/channels/g1/events"
        #expect(try api.request("POST", path, json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)

        let mixed = try api.request("POST", path, json: #"{"events": [{"seq": 1, "patch": {"home": 9}}, {"seq": 2, "patch": {"away": 1}}]}"#)
        #expect(mixed.status == 202)
        #expect(mixed.json?.integer("accepted") == 1)
        #expect(mixed.json?.integer("duplicates") == 1)

        let stale = try api.request("POST", path, json: #"{"events": [{"seq": 1, "patch": {"home": 5}}]}"#)
        #expect(stale.status == 202)
        #expect(stale.json?.integer("accepted") == 0)
        #expect(stale.json?[member: "stale"] == .array([.integer(1)]))

        let bad = try api.request("POST", path, json: #"{"events": [{"seq": 3, "patch": {"home": 3}}, {"seq": 4, "patch": 5}]}"#)
        #expect(bad.status == 422)
        #expect(bad.errorCode == "invalid_event")
        #expect(bad.json?.string("message")?.contains("events[1].patch") == true, "\(bad.text)")

        let oversized = try api.request("POST", path, json: #"{"seq": 3, "patch": {"text": "\#(String(repeating: "x", count: 4200))"}}"#)
        #expect(oversized.status == 422)
        #expect(oversized.errorCode == "payload_too_large")
        #expect(oversized.json?.string("message")?.contains("4096") == true, "\(oversized.text)")

        let shown = try api.request("GET", "/v1/channels/g1")
        #expect(shown.json?.integer("lastSeq") == 2)
        #expect(shown.json?[member: "contentState"] == ["home": 1, "away": 1])
        await fixture.shutDown()
    }

    @Test(.heavy) func badRequestsGetJSONErrorsNamingTheCause() async throws {
        let fixture = try GatewayFixture(maxBodyBytes: 8192)
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "other-1", "storagePolicy": "no-storage"}"#).status == 201)

        let missing = try api.request("GET", "/v1/channels", key: .some(nil))
        #expect(missing.status == 401)
        #expect(missing.errorCode == "missing_api_key")
        let unknown = try api.request("GET", "/v1/channels", key: "nope")
        #expect(unknown.status == 401)
        #expect(unknown.errorCode == "invalid_api_key")
        let outside = try api.request("GET", "/v1/channels/other-1", key: GatewayFixture.clubKey)
        #expect(outside.status == 403)
        #expect(outside.json?.string("message")?.contains("club-") == true)
        let createOutside = try api.request("POST", "/v1/channels", json: #"{"id": "other-2", "storagePolicy": "no-storage"}"#,
                                            key: GatewayFixture.clubKey)
        #expect(createOutside.status == 403)
        let scopedList = try api.request("GET", "/v1/channels", key: GatewayFixture.clubKey)
        #expect(scopedList.json?[member: "channels"] == .array([]))

        let absent = try api.request("GET", "/v1/channels/nothing-here")
        #expect(absent.status == 404)
        #expect(absent.errorCode == "channel_not_found")

        let malformed = try api.request("POST", "/v1/channels/other-1/events", json: #"{"seq": 1, "patch": {"#)
        #expect(malformed.status == 400)
        #expect(malformed.errorCode == "malformed_json")
        #expect(malformed.json?.string("message")?.contains("byte") == true, "\(malformed.text)")

        let unknownField = try api.request("POST", "/v1/channels", json: #"{"id": "x1", "storagePolicy": "no-storage", "colour": 1}"#)
        #expect(unknownField.status == 400)
        #expect(unknownField.errorCode == "unknown_field")
        #expect(unknownField.json?.string("message")?.contains("colour") == true)

        let wrongType = try api.request("POST", "/v1/channels", json: #"{"id": 7, "storagePolicy": "no-storage"}"#)
        #expect(wrongType.status == 400)
        #expect(wrongType.json?.string("message")?.contains("'id'") == true)
        let badPolicy = try api.request("POST", "/v1/channels", json: #"{"id": "x2", "storagePolicy": "forever"}"#)
        #expect(badPolicy.status == 400)
        #expect(badPolicy.json?.string("message")?.contains("storagePolicy") == true)

        let conflicting = try api.request("POST", "/v1/channels", json: #"{"id": "other-1", "storagePolicy": "most-recent"}"#)
        #expect(conflicting.status == 409)
        #expect(conflicting.errorCode == "channel_exists")
        #expect(conflicting.json?.string("message")?.contains("storagePolicy") == true)
        let otherPolicy = try api.request("POST", "/v1/channels", json: #"{"id": "other-1", "storagePolicy": "no-storage", "policy": {"burst": 9}}"#)
        #expect(otherPolicy.status == 409 && otherPolicy.json?.string("message")?.contains("policy") == true, "\(otherPolicy.text)")
        let otherAttributes = try api.request("POST", "/v1/channels", json: #"{"id": "other-1", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(otherAttributes.status == 409 && otherAttributes.json?.string("message")?.contains("attributes") == true, "\(otherAttributes.text)")
        let same = try api.request("POST", "/v1/channels", json: #"{"id": "other-1", "storagePolicy": "no-storage"}"#)
        #expect(same.status == 200, "\(same.text)")

        let huge = try api.request("POST", "/v1/channels/other-1/events", json: String(repeating: " ", count: 9000) + "{}")
        #expect(huge.status == 413)
        #expect(huge.errorCode == "body_too_large")
        await fixture.shutDown()
    }

    @Test(.heavy) func endSendsTheFinalStateThenRefusesEvents() async throws {
        let fixture = try GatewayFixture()
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "e1", "storagePolicy": "no-storage", "policy": {"endGracePeriodSeconds": 0}}"#)
        #expect(created.status == 201, "\(created.text)")
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        #expect(try api.request("POST", "/v1/channels/e1/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)

        // A dismissal date in milliseconds (or any absurd value) is refused, and nothing ends.
        let absurd = try api.request("POST", "/v1/channels/e1/end", json: #"{"dismissAt": 10000000000000}"#)
        #expect(absurd.status == 400 && absurd.text.contains("dismissAt"), "\(absurd.text)")
        #expect(try api.request("GET", "/v1/channels/e1").json?.string("status") == "active")

        let ended = try api.request("POST", "/v1/channels/e1/end", json: #"{"finalState": {"home": 2, "final": true}, "dismissAt": 1900000000}"#)
        #expect(ended.status == 202, "\(ended.text)")
        let refused = try api.request("POST", "/v1/channels/e1/events", json: #"{"seq": 2, "patch": {"home": 3}}"#)
        #expect(refused.status == 409)
        #expect(refused.errorCode == "channel_ended")
        let endedAgain = try api.request("POST", "/v1/channels/e1/end", json: "{}")
        #expect(endedAgain.status == 409)

        try await eventually("the end push and the channel deletion") {
            fixture.mock.counters().count(endpoint: .deleteChannel) == 1
        }
        let end = try #require(broadcasts(fixture.mock, to: apnsID).last)
        #expect(end.event == "end")
        #expect(try aps(end)[member: "content-state"] == ["home": 2, "final": true])
        #expect(try aps(end).integer("dismissal-date") == 1_900_000_000)
        try await eventually("the deleted status") {
            (try? api.request("GET", "/v1/channels/e1").json?.string("status")) == "deleted"
        }

        let deleted = try api.request("DELETE", "/v1/channels/e1")
        #expect(deleted.status == 200)
        #expect(try api.request("GET", "/v1/channels/e1").status == 404)
        await fixture.shutDown()
    }
}
