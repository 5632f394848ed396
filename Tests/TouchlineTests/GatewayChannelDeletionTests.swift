import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// A channel's deletion after its end is retried until APNs confirms it, and a restart picks up
/// the deletions not confirmed before it: no channel leaks toward Apple's limit.
@Suite("Gateway channel deletion", .heavy)
struct GatewayChannelDeletionTests {
    static let quickEnd = #"{"endGracePeriodSeconds": 0}"#

    /// Every deletion refused with 429: the gateway keeps trying, with back-off, and the
    /// channel stays `ended` (its intent kept), never given up or shown deleted.
    @Test func deletionsRefusedWith429AreRetriedWithBackoff() async throws {
        let apns = try MockAPNsFixture {
            $0.faults.tooManyRequestsRate = 1
            $0.faults.rateEndpoints = [.deleteChannel]
        }
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "del-1", "storagePolicy": "no-storage", "policy": \#(Self.quickEnd)}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        #expect(try api.request("POST", "/v1/channels/del-1/end", json: #"{"finalState": {"done": true}}"#).status == 202)
        func attempts() -> [MockAPNsRecordedRequest] {
            apns.mock.recordedRequests().filter { $0.endpoint == .deleteChannel }
        }
        try await eventually("three deletion attempts", timeout: .seconds(15)) { attempts().count >= 3 }
        let seen = attempts()
        #expect(seen.allSatisfy { $0.status == 429 })
        // Back-off between attempts: at least half the first delay (1 s, jitter 0.5) apart.
        let gaps = zip(seen.dropFirst(), seen).map { $0.receivedAt - $1.receivedAt }
        #expect(gaps.allSatisfy { $0 >= .milliseconds(450) }, "\(gaps)")
        #expect(try api.request("GET", "/v1/channels/del-1").json?.string("status") == "ended")
        #expect(apns.mock.channels()[apnsID] != nil)
    }

    @Test func aDeletionNotConfirmedBeforeARestartIsSentAfterIt() async throws {
        let shared = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: shared) }
        let channelsFile = shared + "/channels.json"
        let refusing = try MockAPNsFixture {
            $0.faults.tooManyRequestsRate = 1
            $0.faults.rateEndpoints = [.deleteChannel]
            $0.channelsFile = channelsFile
        }
        let data = shared + "/data"
        let first = try GatewayFixture(apns: refusing.gatewaySettings, directory: data)
        let created = try first.admin.request("POST", "/v1/channels", json: #"{"id": "r-1", "storagePolicy": "no-storage", "policy": \#(Self.quickEnd)}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        #expect(try first.admin.request("POST", "/v1/channels/r-1/end").status == 202)
        try await eventually("a refused deletion") {
            refusing.mock.recordedRequests().contains { $0.endpoint == .deleteChannel && $0.status == 429 }
        }
        #expect(try first.admin.request("GET", "/v1/channels/r-1").json?.string("status") == "ended")
        await first.shutDown(removingData: false)
        await refusing.shutDown()

        let accepting = try MockAPNsFixture { $0.channelsFile = channelsFile }
        defer { Task { await accepting.shutDown() } }
        #expect(accepting.mock.channels()[apnsID] != nil, "the second mock lost the channel")
        let second = try GatewayFixture(apns: accepting.gatewaySettings, directory: data)
        defer { Task { await second.shutDown() } }
        try await eventually("the deletion after the restart") { accepting.mock.channels()[apnsID] == nil }
        try await eventually("the channel shown deleted") {
            (try? second.admin.request("GET", "/v1/channels/r-1").json?.string("status")) == "deleted"
        }
    }
}
