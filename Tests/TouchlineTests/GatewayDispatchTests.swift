import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// APNs answers feed back into the channel engine: a deleted channel is marked broken, 429 and
/// 5xx are counted and retried later, and the channel stays usable.
@Suite("Gateway dispatch results", .heavy)
struct GatewayDispatchTests {
    @Test func aChannelAPNsForgotIsMarkedBrokenAndRefusesEvents() async throws {
        let apns = try MockAPNsFixture()
        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        let api = gateway.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "gone", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        _ = try await apns.client.deleteChannel(apnsID)

        #expect(try api.request("POST", "/v1/channels/gone/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)
        try await eventually("the broken status") {
            (try? api.request("GET", "/v1/channels/gone").json?.string("status")) == "broken"
        }
        let shown = try api.request("GET", "/v1/channels/gone")
        #expect(shown.json?.string("brokenReason")?.contains("ChannelNotRegistered") == true)
        #expect(apns.mock.counters().count(endpoint: .broadcast, status: 400, reason: .channelNotRegistered) == 1)
        let refused = try api.request("POST", "/v1/channels/gone/events", json: #"{"seq": 2, "patch": {"home": 2}}"#)
        #expect(refused.status == 409)
        #expect(refused.errorCode == "channel_broken")
        await gateway.shutDown()
        await apns.shutDown()
    }

    @Test(arguments: [("throttled", 429), ("retries", 500)])
    func failedPublishesAreCountedAndKeptForLater(counter: String, status: Int) async throws {
        let apns = try MockAPNsFixture { configuration in
            configuration.faults.rateEndpoints = [.broadcast]
            if status == 429 { configuration.faults.tooManyRequestsRate = 1 } else { configuration.faults.internalServerErrorRate = 1 }
        }
        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        let api = gateway.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "busy", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/busy/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)
        try await eventually("the failure to be counted") {
            ((try? api.request("GET", "/v1/channels/busy").json?[member: "counters"]?.integer(counter)) ?? 0) >= 1
        }
        // Every answer so far was this failure, and the channel is neither broken nor dropped.
        let shown = try api.request("GET", "/v1/channels/busy")
        #expect(shown.json?.string("status") == "active")
        #expect(shown.json?[member: "counters"]?.integer("dropped") == 0)
        let answers = apns.mock.counters()
        #expect(answers.count(endpoint: .broadcast, status: status) >= 1)
        #expect(answers.count(endpoint: .broadcast) == answers.count(endpoint: .broadcast, status: status))
        // Still taking events while the retry waits for its back-off.
        #expect(try api.request("POST", "/v1/channels/busy/events", json: #"{"seq": 2, "patch": {"home": 2}}"#).status == 202)
        await gateway.shutDown()
        await apns.shutDown()
    }

    @Test func theAppsChannelLimitIsAClearConflict() async throws {
        let apns = try MockAPNsFixture { $0.channelLimit = 1 }
        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        let api = gateway.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "one", "storagePolicy": "no-storage"}"#).status == 201)
        let refused = try api.request("POST", "/v1/channels", json: #"{"id": "two", "storagePolicy": "no-storage"}"#)
        #expect(refused.status == 409)
        #expect(refused.errorCode == "channel_limit")
        #expect(refused.json?.string("message")?.contains("CannotCreateChannelConfig") == true)
        let pending = try api.request("GET", "/v1/channels/two")
        #expect(pending.json?.string("status") == "creating")
        await gateway.shutDown()
        await apns.shutDown()
    }
}
