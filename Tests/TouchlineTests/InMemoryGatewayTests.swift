import APNs
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// A gateway on the in-memory stores and APNs dispatch (`Gateway.Backends.inMemory`): no file,
/// no connection, the provider API unchanged (its client in process: no heavy slot).
@Suite(.gatewaysInProcess) struct InMemoryGatewayTests {
    /// A gateway on the in-memory backends, `configure` changing its configuration first, and an
    /// admin client of it in process.
    static func start(channels: InMemoryStore, personal: InMemoryStore, apns: InMemoryAPNsPair,
                      configure: (inout GatewayConfiguration) -> Void = { _ in }) throws -> (Gateway, GatewayTestClient) {
        // APNs settings are required by `.apple` mode and ignored by the in-memory dispatch.
        let settings = GatewayConfiguration.APNsSettings(keyPath: "/nonexistent/key.p8", keyID: "KEY", teamID: "TEAM",
                                                         bundleID: "com.example.touchline", environment: .sandbox)
        var configuration = GatewayConfiguration(apnsMode: .apple, apns: settings, listenHost: "127.0.0.1", listenPort: 0,
                                                 dataDirectory: FileManager.default.temporaryDirectory.path,
                                                 apiKeys: [.init(key: GatewayFixture.adminKey, scope: .admin)])
        configure(&configuration)
        let gateway = Gateway(configuration: configuration, backends: .inMemory(channels: channels, personal: personal, apns: apns))
        _ = try gateway.start()
        return (gateway, GatewayTestClient(.inProcess(gateway), key: GatewayFixture.adminKey))
    }

    @Test func channelsAndEventsGoThroughTheInjectedStoresAndDispatch() async throws {
        let channels = InMemoryStore(name: "channels"), personal = InMemoryStore(name: "personal")
        let apns = InMemoryAPNsPair()
        let (gateway, api) = try Self.start(channels: channels, personal: personal, apns: apns)
        let created = try api.request("POST", "/v1/channels",
                                      json: #"{"id": "m1", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(created.status == 201, "\(created.text)")
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        #expect(apns.broadcast?.channels[apnsID] == .noStorage)

        let posted = try api.request("POST", "/v1/channels/m1/events", json: #"{"events": [{"seq": 1, "type": "status", "status": "live"}]}"#)
        #expect(posted.status == 202, "\(posted.text)")
        let reader = channels.openReader()
        #expect(try reader.channel(id: "m1")?.lastSeq == 1, "answered 202 only once committed")
        try await eventually("one broadcast") {
            apns.broadcast?.requests.contains { if case .broadcast(let b) = $0 { b.channelID == apnsID } else { false } } == true
        }

        // The failure switch: a full disk answers 503, and the gateway takes writes again once it recovers.
        channels.failStorage()
        let goal = #"{"events": [{"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 31}]}"#
        let refused = try api.request("POST", "/v1/channels/m1/events", json: goal)
        #expect(refused.status == 503 && refused.errorCode == "store_unavailable", "\(refused.text)")
        channels.restoreStorage()
        try await eventually("the store healthy again") { !channels.health.isFailing }
        let accepted = try api.request("POST", "/v1/channels/m1/events", json: goal)
        #expect(accepted.status == 202, "\(accepted.text)")
        await gateway.shutdown()

        // A restart on what was committed finds the channel.
        let (again, client) = try Self.start(channels: channels.reopened(), personal: personal.reopened(), apns: InMemoryAPNsPair())
        let restored = try client.request("GET", "/v1/channels/m1")
        #expect(restored.status == 200 && restored.json?.string("apnsChannelId") == apnsID, "\(restored.text)")
        await again.shutdown()
    }
}
