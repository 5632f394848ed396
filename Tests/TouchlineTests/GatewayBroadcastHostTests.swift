import APNs
import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore

#if canImport(Glibc)
import Glibc
#endif

/// `apns.broadcastHost` moves broadcasts, and only broadcasts, to a host of their own.
@Suite(.heavy) struct GatewayBroadcastHostTests {
    @Test func broadcastsGoToTheBroadcastHostWhileDevicePushesKeepThePushHost() async throws {
        let apns = try MockAPNsFixture()
        var settings = apns.gatewaySettings
        guard case .custom(_, let mockPushPort, let managementHost, let managementPort) = settings.environment else {
            Issue.record("the mock fixture is a custom environment")
            return
        }
        // The push host is dead: a broadcast can only arrive if it went to the broadcast host.
        settings.environment = .custom(pushHost: "localhost", pushPort: try LoopbackSocket.freePort(), managementHost: managementHost,
                                       managementPort: managementPort)
        settings.broadcastHost = APNsEndpoint(host: "localhost", port: mockPushPort)
        let fixture = try GatewayFixture(apns: settings)
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let created = try fixture.admin.request("POST", "/v1/channels", json: """
            {"id": "club-host", "storagePolicy": "no-storage", "attributes": \(GatewayFixture.matchAttributes)}
            """)
        #expect(created.status == 201, "\(created.text)")
        let posted = try fixture.admin.request("POST", "/v1/channels/club-host/events",
                                               json: #"{"seq": 1, "type": "goal", "team": "home", "player": "Saka", "minute": 3}"#)
        #expect(posted.status == 202, "\(posted.text)")
        try await eventually("the goal's broadcast at the mock") { apns.mock.recordedRequests().contains { $0.endpoint == .broadcast } }
        #expect(apns.mock.counters().count(endpoint: .broadcast, status: 200) == 1)
        let broadcast = try #require(apns.mock.recordedRequests().first { $0.endpoint == .broadcast })
        #expect(broadcast.port == .push)
        // The broadcast pool connected; the device pool (on the dead push host) holds nothing back.
        let ready = try fixture.admin.request("GET", "/readyz")
        let pools = ready.json?[member: "apnsPools"]
        #expect(pools.map { "\($0)" }?.contains("broadcast") == true, "\(ready.text)")
    }
}
