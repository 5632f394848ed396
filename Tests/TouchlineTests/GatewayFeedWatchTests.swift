import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// Feed watching through a real gateway: a live match falls silent and is marked stalled (API,
/// metrics, a webhook event), events resume and it recovers, a jump of `seq` is a gap; a match
/// not live is never stalled.
@Suite("Gateway feed watching", .heavy)
struct GatewayFeedWatchTests {
    @Test func aSilentLiveFeedStallsRecoversAndItsGapsAreReported() async throws {
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        let fixture = try GatewayFixture(webhooks: try GatewayWebhookTests.settings(url: receiver.url))
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "feed-1", "storagePolicy": "no-storage", "policy": {"feedStallSeconds": 1.5}, "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(created.status == 201, "\(created.text)")
        // Scheduled: not live, so a silent feed is not stalled.
        try await Task.sleep(for: .milliseconds(800))
        #expect(try api.request("GET", "/v1/channels/feed-1").json?[member: "feed"]?.string("state") == "idle")

        #expect(try api.request("POST", "/v1/channels/feed-1/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        #expect(try api.request("GET", "/v1/channels/feed-1").json?[member: "feed"]?.string("state") == "watching")
        try await eventually("the feed stalled") {
            (try? api.request("GET", "/v1/channels/feed-1").json?[member: "feed"]?.string("state")) == "stalled"
        }
        let stalled = try await GatewayWebhookEventTests.data(of: "channel.feed_stalled", at: receiver)
        #expect(stalled.string("channelId") == "feed-1" && stalled[member: "lastSeq"] == .integer(1), "\(stalled)")
        let metrics = try api.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"touchline_feed_stalled{channel="feed-1"}"#) == 1)
        #expect(metricValue(metrics, #"touchline_feed_stalls_total{channel="feed-1"}"#) == 1)

        // Events resume, skipping seq 2 and 3: recovered, and a gap.
        #expect(try api.request("POST", "/v1/channels/feed-1/events", json: #"{"seq": 4, "type": "clock", "clockSeconds": 60}"#).status == 202)
        let feed = try #require(try api.request("GET", "/v1/channels/feed-1").json?[member: "feed"])
        #expect(feed.string("state") == "watching" && feed[member: "gaps"] == .integer(1) && feed[member: "lastGap"] == ["from": 1, "to": 4], "\(feed)")
        #expect(metricValue(try api.request("GET", "/metrics").text, #"touchline_feed_stalled{channel="feed-1"}"#) == 0)
        // Full time at once (a silence as long as the threshold would be a second stall on a
        // busy machine): no longer live, no further stall however long the silence.
        #expect(try api.request("POST", "/v1/channels/feed-1/events", json: #"{"seq": 5, "type": "status", "status": "finished"}"#).status == 202)
        let gap = try await GatewayWebhookEventTests.data(of: "channel.feed_gap", at: receiver)
        #expect(gap[member: "fromSeq"] == .integer(1) && gap[member: "toSeq"] == .integer(4) && gap[member: "missing"] == .integer(2), "\(gap)")
        _ = try await GatewayWebhookEventTests.data(of: "channel.feed_recovered", at: receiver)
        try await Task.sleep(for: .milliseconds(1_700))
        #expect(try api.request("GET", "/v1/channels/feed-1").json?[member: "feed"]?.string("state") == "idle")
        #expect(receiver.events("channel.feed_stalled").count == 1)
    }
}
