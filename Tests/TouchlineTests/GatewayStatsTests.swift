import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// `/v1/stats`, `/v1/channels/{id}/stats`, `/healthz` and `/readyz`: a channel's stats in process
/// on the in-memory backends; the global stats, which show the APNs connections, and readiness,
/// which follows them, against a real gateway and mock APNs.
@Suite("Gateway stats and health", .gatewaysInProcess)
struct GatewayStatsTests {
    @Test func channelStatsShowPushesHistoryBudgetAndState() async throws {
        let gateway = try GatewayFixture(tier: .inProcess)
        let api = gateway.admin
        let create = #"{"id": "club-ars", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#
        #expect(try api.request("POST", "/v1/channels", json: create).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-ars/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/club-ars/events",
                                json: #"{"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 12}"#).status == 202)
        try await eventually("two answered pushes") {
            guard case .array(let pushes)? = try? api.request("GET", "/v1/channels/club-ars/stats").json?[member: "recentPushes"] else { return false }
            return pushes.count == 2 && pushes.allSatisfy { $0.string("outcome") == "accepted" }
        }
        let stats = try #require(try api.request("GET", "/v1/channels/club-ars/stats").json)
        #expect(stats.string("status") == "active")
        #expect(stats.string("summary") == "ARS 1-0 CHE, 0'")
        #expect(stats.integer("pushesLastMinute") == 2)
        #expect(stats[member: "priorityMix"]?.integer("10") == 1)
        #expect(stats[member: "priorityMix"]?.integer("5") == 1)
        #expect(stats.integer("priorityBudgetRemaining") == Int64(ChannelPolicy.default.priorityBudgetPerHour - 1))
        #expect(stats[member: "events"]?.integer("received") == 2)
        #expect(stats[member: "errors"]?.integer("total") == 0)
        #expect(stats.integer("lastPushAt") != nil)
        #expect(stats[member: "contentState"]?.integer("homeScore") == 1)
        guard case .array(let pushes)? = stats[member: "recentPushes"] else { Issue.record("no push history"); return }
        #expect(pushes.map { $0.integer("priority") } == [5, 10])
        #expect(pushes.allSatisfy { ($0.integer("bytes") ?? 0) > 100 })

        // Scoped like the channel routes.
        let club = gateway.client(key: GatewayFixture.clubKey)
        #expect(try club.request("GET", "/v1/channels/club-ars/stats").status == 200)
        #expect(try api.request("GET", "/v1/channels/nope/stats").errorCode == "channel_not_found")
        #expect(try gateway.client(key: nil).request("GET", "/v1/channels/club-ars/stats").status == 401)
        await gateway.shutDown()
    }

    @Test(.heavy) func globalStatsCountWhatTheKeyMaySee() async throws {
        let gateway = try GatewayFixture()
        let api = gateway.admin
        for id in ["club-a", "other-b"] {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#).status == 201)
            #expect(try api.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": 1, "patch": {"v": 1}}"#).status == 202)
        }
        try await eventually("both pushes answered") {
            guard case .array(let responses)? = try? api.request("GET", "/v1/stats").json?[member: "apns"]?[member: "responses"] else { return false }
            return responses.contains { $0.string("pool") == "broadcast" && $0.string("status") == "200" && $0.integer("count") == 2 }
        }
        let all = try #require(try api.request("GET", "/v1/stats").json)
        #expect(all[member: "channels"]?.integer("active") == 2)
        #expect(all[member: "events"]?.integer("received") == 2)
        #expect(all[member: "pushes"]?[member: "byPriority"]?.integer("5") == 2)
        #expect(all[member: "personal"]?.integer("jobsRunning") == 0)
        #expect(all[member: "queues"]?.integer("store") != nil)
        guard case .array(let pools)? = all[member: "connections"] else { Issue.record("no connections"); return }
        #expect(pools.map { $0.string("pool") } == ["broadcast", "management", "personal"])

        let club = try #require(try GatewayTestClient(port: gateway.port, key: GatewayFixture.clubKey).request("GET", "/v1/stats").json)
        #expect(club[member: "channels"]?.integer("active") == 1)
        #expect(club[member: "events"]?.integer("received") == 1)
        #expect(try GatewayTestClient(port: gateway.port).request("GET", "/v1/stats").status == 401)
        await gateway.shutDown()
    }

    /// A provider key sees its own app's APNs answers, pools and queues only: `tv`'s provider
    /// never learns what the `default` app sends (its answers, connections, token age), and the
    /// admin key still sees every app.
    @Test(.heavy) func globalStatsShowAProviderKeyOnlyItsOwnApp() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: GatewayAppsTests.tvIdentity)
        let fixture = try GatewayAppsTests.gateway(league: league, tv: tv)
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-1", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-1/events", json: GatewayAppsTests.goals(1)).status == 202)
        try await eventually("the default app's broadcast answered") {
            guard case .array(let responses)? = try? api.request("GET", "/v1/stats").json?[member: "apns"]?[member: "responses"] else { return false }
            return responses.contains { $0.string("pool") == "broadcast" && $0.string("status") == "200" }
        }
        func pools(_ stats: JSONValue?, _ name: String) -> [String?] {
            guard case .array(let entries)? = stats?[member: name] else { return [] }
            return entries.map { $0.string("app") }
        }
        let all = try api.request("GET", "/v1/stats").json
        #expect(pools(all, "apps") == ["default", "tv"])
        #expect(Set(pools(all, "connections")) == ["default", "tv"])

        let tvStats = try GatewayTestClient(port: fixture.port, key: GatewayAppsTests.tvKey).request("GET", "/v1/stats").json
        #expect(pools(tvStats, "apps") == ["tv"])
        #expect(Set(pools(tvStats, "connections")) == ["tv"], "\(String(describing: tvStats?[member: "connections"]))")
        guard case .array(let tvResponses)? = tvStats?[member: "apns"]?[member: "responses"] else { Issue.record("no responses"); return }
        #expect(!tvResponses.contains { $0.string("pool") == "broadcast" }, "the default app's broadcast is not tv's: \(tvResponses)")
        #expect(tvResponses.contains { $0.string("pool") == "management" && $0.string("status")?.hasPrefix("2") == true },
                "tv's own channel create: \(tvResponses)")
        #expect(tvStats?[member: "channels"]?.integer("total") == 1)

        let clubStats = try GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey).request("GET", "/v1/stats").json
        #expect(pools(clubStats, "apps") == ["default"])
        #expect(Set(pools(clubStats, "connections")) == ["default"])
    }

    @Test(.heavy) func readinessFollowsTheAPNsConnectionsAndHealthStaysUp() async throws {
        let apns = try MockAPNsFixture()
        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        let probe = GatewayTestClient(port: gateway.port)
        #expect(try probe.request("GET", "/healthz").status == 200)
        try await eventually("readiness") { (try? probe.request("GET", "/readyz").status) == 200 }
        #expect(try probe.request("GET", "/readyz").json?.string("status") == "ready")

        apns.mock.stop()
        try await eventually("unreadiness once APNs is gone") { (try? probe.request("GET", "/readyz").status) == 503 }
        let body = try #require(try probe.request("GET", "/readyz").json)
        #expect(body.string("status") == "not_ready")
        #expect(body[member: "store"]?[member: "open"] == .bool(true))
        guard case .array(let pools)? = body[member: "apnsPools"] else { Issue.record("no pools"); return }
        #expect(pools.contains { $0[member: "ready"] == .bool(false) })
        let slots = pools.flatMap { pool -> [JSONValue] in if case .array(let slots)? = pool[member: "slots"] { slots } else { [] } }
        #expect(slots.contains { ($0.integer("consecutiveFailures") ?? 0) >= 1 })
        #expect(try probe.request("GET", "/healthz").status == 200)
        await gateway.shutDown()
        await apns.shutDown()
    }
}
