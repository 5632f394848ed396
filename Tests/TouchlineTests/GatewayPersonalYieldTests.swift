import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// While the broadcast path waits (here: any wait counts, threshold 0) the personal queue keeps
/// at most `yieldInFlight` sends in flight; without broadcasts it uses its whole `maxInFlight`.
@Suite("Personal queue yields to broadcasts", .heavy)
struct GatewayPersonalYieldTests {
    @Test(arguments: [true, false])
    func inFlightIsCappedOnlyWhileBroadcastsAreActive(broadcasting: Bool) async throws {
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(200) }
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data",
                                         personalQueue: PersonalQueueSettings(maxInFlight: 40, yieldInFlight: 3,
                                                                                     yieldThreshold: .zero))
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        for n in 0..<40 {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(GatewayPersonalAPITests.token(n))", "kind": "push-to-start", "follows": ["team:ARS"]}
                """).status == 201)
        }
        if broadcasting {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "live", "storagePolicy": "no-storage"}"#).status == 201)
            #expect(try api.request("POST", "/v1/channels/live/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)
        }
        #expect(try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody).status == 202)
        var seen: [Int64] = []
        let until = ContinuousClock.now + .milliseconds(600)
        while ContinuousClock.now < until {
            if let inFlight = try api.request("GET", "/v1/stats").json?[member: "personal"]?.integer("inFlight") { seen.append(inFlight) }
            try await Task.sleep(for: .milliseconds(25))
        }
        let most = seen.max() ?? 0
        if broadcasting {
            #expect(most > 0 && most <= 3, "in flight while broadcasting: \(seen)")
        } else {
            #expect(most > 3, "in flight without broadcasts: \(seen)")
        }
    }
}
