import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// APNs answers feed back into the channel engine: a deleted channel is marked broken, 429 and
/// 5xx are counted and retried later, and the channel stays usable. The first test live, APNs
/// forgetting a channel the strict mock created; the others in process on the in-memory
/// backends, APNs's answers scripted as the mock gives them.
@Suite("Gateway dispatch results", .gatewaysInProcess)
struct GatewayDispatchTests {
    @Test(.heavy) func aChannelAPNsForgotIsMarkedBrokenAndRefusesEvents() async throws {
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

    @Test(arguments: [("throttled", 429, "TooManyRequests"), ("retries", 500, "InternalServerError")])
    func failedPublishesAreCountedAndKeptForLater(counter: String, status: Int, reason: String) async throws {
        let gateway = try GatewayFixture(tier: .inProcess)
        defer { Task { await gateway.shutDown() } }
        let apns = try #require(gateway.inMemory?.apns.broadcast)
        apns.script { request in
            guard case .broadcast = request else { return nil }
            return .failure(InMemoryAPNs.rejection(status: status, reason: reason, endpoint: .broadcast))
        }
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
        #expect(apns.requests.contains { if case .broadcast = $0 { true } else { false } })
        // Still taking events while the retry waits for its back-off.
        #expect(try api.request("POST", "/v1/channels/busy/events", json: #"{"seq": 2, "patch": {"home": 2}}"#).status == 202)
    }

    @Test func theAppsChannelLimitIsAClearConflict() async throws {
        let gateway = try GatewayFixture(tier: .inProcess)
        defer { Task { await gateway.shutDown() } }
        // Room for one channel, as the mock with `channelLimit = 1` answers a second create.
        let creates = CreateCount()
        try #require(gateway.inMemory?.apns.broadcast).script { request in
            guard case .createChannel = request, creates.next() > 1 else { return nil }
            return .failure(InMemoryAPNs.rejection(status: 400, reason: "CannotCreateChannelConfig", endpoint: .channelManagement))
        }
        let api = gateway.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "one", "storagePolicy": "no-storage"}"#).status == 201)
        let refused = try api.request("POST", "/v1/channels", json: #"{"id": "two", "storagePolicy": "no-storage"}"#)
        #expect(refused.status == 409)
        #expect(refused.errorCode == "channel_limit")
        #expect(refused.json?.string("message")?.contains("CannotCreateChannelConfig") == true)
        let pending = try api.request("GET", "/v1/channels/two")
        #expect(pending.json?.string("status") == "creating")
    }
}

/// The channel creates a scripted APNs has answered, counted as they come.
private final class CreateCount: Sendable {
    private let count = Mutex(0)

    /// Counts one more create and returns how many there have been.
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
}
