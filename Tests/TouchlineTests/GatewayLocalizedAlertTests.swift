import APNs
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// Localized alerts through the gateway: the configured default and a channel's own mode, the
/// alert that reaches APNs, the mode kept across a restart, and localized alerts a provider
/// sends itself, checked against the app's catalogue.
@Suite(.gatewaysInProcess) struct GatewayLocalizedAlertTests {
    static func start(channels: InMemoryStore, apns: InMemoryAPNsPair, alertMode: AlertMode) throws -> (Gateway, GatewayTestClient) {
        try InMemoryGatewayTests.start(channels: channels, personal: InMemoryStore(name: "personal"), apns: apns) {
            $0.alertMode = alertMode
        }
    }

    /// The alerts of the broadcasts sent to `apnsID`, as JSON text.
    static func alerts(_ apns: InMemoryAPNsPair, _ apnsID: String) -> [String] {
        (apns.broadcast?.requests ?? []).compactMap { request -> String? in
            guard case .broadcast(let push) = request, push.channelID == apnsID,
                  let body = try? JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any],
                  let alert = (body["aps"] as? [String: Any])?["alert"],
                  let text = try? JSONSerialization.data(withJSONObject: alert, options: .sortedKeys) else { return nil }
            return String(decoding: text, as: UTF8.self)
        }
    }

    @Test func aLocalizedDefaultSendsKeysAndAChannelMayChooseText() async throws {
        let channels = InMemoryStore(name: "channels"), apns = InMemoryAPNsPair()
        let (gateway, api) = try Self.start(channels: channels, apns: apns, alertMode: .localized)
        let localized = try api.request("POST", "/v1/channels", json: #"{"id": "m1", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(localized.status == 201 && localized.json?[member: "alerts"]?.string("mode") == "localized", "\(localized.text)")
        let text = try api.request("POST", "/v1/channels", json: #"{"id": "m2", "storagePolicy": "no-storage", "alerts": {"mode": "text"}, "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(text.status == 201, "\(text.text)")
        let goal = #"{"seq": 1, "type": "goal", "team": "home", "player": "Saka", "minute": 31}"#
        for id in ["m1", "m2"] {
            #expect(try api.request("POST", "/v1/channels/\(id)/events", json: goal).status == 202)
        }
        let (first, second) = (try #require(localized.json?.string("apnsChannelId")), try #require(text.json?.string("apnsChannelId")))
        try await eventually("both goals at APNs") { !Self.alerts(apns, first).isEmpty && !Self.alerts(apns, second).isEmpty }
        #expect(Self.alerts(apns, first) == [#"{"body":{"loc-args":["ARS","1","0","CHE","Saka","31"],"loc-key":"football.score.scorerMinute"},"#
                                             + #""title":{"loc-args":[],"loc-key":"football.goal.title"}}"#])
        #expect(Self.alerts(apns, second) == [#"{"body":"ARS 1-0 CHE","title":"Goal!"}"#])

        // The same create again is idempotent; one asking for another mode is a conflict.
        let again = try api.request("POST", "/v1/channels", json: #"{"id": "m2", "storagePolicy": "no-storage", "alerts": {"mode": "localized"}}"#)
        #expect(again.status == 409 && again.text.contains("alert mode"), "\(again.text)")
        await gateway.shutdown()

        // The mode is the channel's, kept across a restart, whatever the new default.
        let (restarted, client) = try Self.start(channels: channels.reopened(), apns: InMemoryAPNsPair(), alertMode: .text)
        #expect(try client.request("GET", "/v1/channels/m1").json?[member: "alerts"]?.string("mode") == "localized")
        #expect(try client.request("GET", "/v1/channels/m2").json?[member: "alerts"]?.string("mode") == "text")
        await restarted.shutdown()
    }

    @Test func aProviderMayAlertWithCatalogueKeysAndIsToldWhatDoesNotFit() async throws {
        let channels = InMemoryStore(name: "channels"), apns = InMemoryAPNsPair()
        let (gateway, api) = try Self.start(channels: channels, apns: apns, alertMode: .text)
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "p1", "storagePolicy": "no-storage"}"#)
        #expect(created.status == 201)
        func post(_ alert: String, seq: Int) throws -> GatewayTestClient.Response {
            try api.request("POST", "/v1/channels/p1/events",
                            json: #"{"seq": \#(seq), "patch": {"home": \#(seq)}, "importance": "critical", "alert": \#(alert)}"#)
        }
        let refusals: [(String, String)] = [
            (#"{"title": {"loc-key": "football.goal.titel"}, "body": "x"}"#, "alert.title.loc-key"),
            (#"{"title": {"loc-key": "football.goal.title"}, "body": {"loc-key": "football.score", "loc-args": ["ARS", "1", "0"]}}"#,
             "must hold 4 argument(s) for 'football.score', got 3"),
            (#"{"title": {"loc-key": "football.goal.title"}, "body": {"loc-key": "football.incident.team", "loc-args": [7]}}"#,
             "alert.body.loc-args"),
            (#"{"title": {"loc-key": "football.goal.title", "title-loc-key": "x"}, "body": "x"}"#, "alert.title.title-loc-key"),
            (#"{"title": {"loc-args": []}, "body": "x"}"#, "alert.title.loc-key"),
        ]
        for (alert, named) in refusals {
            let refused = try post(alert, seq: 1)
            #expect(refused.status == 422 && refused.errorCode == "invalid_event" && refused.text.contains(named), "\(alert): \(refused.text)")
        }
        #expect(try api.request("GET", "/v1/channels/p1").json?[member: "lastSeq"] == .integer(0), "nothing applied")

        let accepted = try post(#"{"title": {"loc-key": "football.goal.title"}, "body": {"loc-key": "football.score", "loc-args": ["ARS", "1", "0", "CHE"]}}"#, seq: 1)
        #expect(accepted.status == 202, "\(accepted.text)")
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        try await eventually("the alert at APNs") { !Self.alerts(apns, apnsID).isEmpty }
        #expect(Self.alerts(apns, apnsID) == [#"{"body":{"loc-args":["ARS","1","0","CHE"],"loc-key":"football.score"},"#
                                              + #""title":{"loc-args":[],"loc-key":"football.goal.title"}}"#])
        await gateway.shutdown()
    }

    @Test func anUnknownModeIsRefusedNamingTheField() async throws {
        let (gateway, api) = try Self.start(channels: InMemoryStore(name: "channels"), apns: InMemoryAPNsPair(), alertMode: .text)
        let refused = try api.request("POST", "/v1/channels", json: #"{"id": "x", "storagePolicy": "no-storage", "alerts": {"mode": "klingon"}}"#)
        #expect(refused.status == 400 && refused.errorCode == "invalid_field" && refused.text.contains("alerts.mode"), "\(refused.text)")
        #expect(try api.request("GET", "/v1/channels/x").status == 404)
        await gateway.shutdown()
    }
}
