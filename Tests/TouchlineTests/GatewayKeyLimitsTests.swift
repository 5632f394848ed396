import APNsMock
import Foundation
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineAccess
@testable import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// What one key may make the gateway do (`keyLimits`, `apiKeys[].limits`, `followTopics`): its
/// channels, its kickoffs and rollovers, a channel's rollovers' spacing, and the follow topics
/// its kickoffs reach. The buckets in virtual time; the refusals against a running gateway,
/// each named, with `Retry-After` where time lifts it, counted in `/metrics`, and the admin key
/// held only to what is given to it.
@Suite("Gateway per-key limits")
struct GatewayKeyLimitsTests {
    static let provider = GatewayConfiguration.APIKey(key: "provider-key-0123456789", scope: .channelPrefix("acme-"))
    static let admin = GatewayConfiguration.APIKey(key: "admin-key-0123456789", scope: .admin)

    @Test func aKeysStartsComeFromABucketInVirtualTime() throws {
        let start = UnixTime(seconds: 1_767_225_600)
        var own = Self.provider
        own.key = "own-key-0123456789"
        own.limits = KeyLimits.Override(startsPerHour: 3600, startBurst: 1)
        var quotas = KeyQuotas(keys: [Self.provider, own, Self.admin], settings: KeyLimits(startsPerHour: 60, startBurst: 2), now: start)
        try quotas.takeStart(for: Self.provider, now: start)
        try quotas.takeStart(for: Self.provider, now: start)
        let refused = #expect(throws: HTTPError.self) { try quotas.takeStart(for: Self.provider, now: start) }
        #expect(refused?.status == 429 && refused?.code == "start_rate_limited")
        #expect(refused?.headers.first { $0.0 == "Retry-After" }?.1 == "60", "one start back a minute")
        try quotas.takeStart(for: Self.provider, now: start + .seconds(60))
        // A key's own limits win; the admin key has none of its own: never refused.
        try quotas.takeStart(for: own, now: start)
        #expect(throws: HTTPError.self) { try quotas.takeStart(for: own, now: start) }
        try quotas.takeStart(for: own, now: start + .seconds(1))
        for _ in 0..<1_000 { try quotas.takeStart(for: Self.admin, now: start) }
        #expect(quotas.refusals == [KeyQuotas.Refusal(scope: "acme-", limit: .starts): 2])
    }

    @Test func aKeysChannelsAreCountedAgainstItsCap() throws {
        var quotas = KeyQuotas(keys: [Self.provider, Self.admin], settings: KeyLimits(channels: 2), now: UnixTime(seconds: 0))
        try quotas.requireChannelRoom(for: Self.provider) { 1 }
        let refused = #expect(throws: HTTPError.self) { try quotas.requireChannelRoom(for: Self.provider) { 2 } }
        #expect(refused?.status == 409 && refused?.code == "key_channel_limit")
        var counted = false
        try quotas.requireChannelRoom(for: Self.admin) { counted = true; return 1_000_000 }
        #expect(!counted, "an admin key's channels are not even counted")
    }

    @Test func followTopicsAreTheKeysChannelsAndWhatIsGranted() throws {
        var key = Self.provider
        key.followTopics = ["team:ARS", "league:PL:*"]
        for topic in ["channel:acme-1", "channel:acme-", "team:ARS", "league:PL:2026", "league:PL:"] {
            #expect(FollowTopicGrants.allows(key, topic), "\(topic)")
        }
        for topic in ["channel:beta-x", "channel:", "team:ARSX", "team:CHE", "league:PLX", "acme-1"] {
            #expect(!FollowTopicGrants.allows(key, topic), "\(topic)")
        }
        #expect(FollowTopicGrants.allows(Self.admin, "channel:beta-x"))
        #expect(try FollowTopicGrants.topics(json: ["team:ARS", "league:*"]) == ["team:ARS", "league:*"])
        for bad: JSONValue in [["*"], ["te*am"], [""], ["team:\u{7}"], .string("team:ARS"), .array(Array(repeating: "t", count: 65))] {
            #expect(throws: InvalidConfigurationValue.self) { try FollowTopicGrants.topics(json: bad) }
        }
    }

    /// The issue's case: provider `acme-` kicking off the followers of another provider's channel.
    @Test(.heavy) func aProviderKickoffReachesOnlyTheTopicsItMayAddress() async throws {
        let fixture = try GatewayFixture { $0.apiKeys.append(Self.provider) }
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let acme = GatewayTestClient(port: fixture.port, key: Self.provider.key)
        #expect(try acme.request("POST", "/v1/channels", json: #"{"id": "acme-1", "storagePolicy": "no-storage"}"#).status == 201)
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(1), follows: "channel:beta-x", user: "beta-fan", on: api)
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(2), follows: "channel:acme-1", user: "acme-fan", on: api)
        for topic in ["channel:beta-x", "team:ARS"] {
            let refused = try acme.request("POST", "/v1/channels/acme-1/start", json: GatewayKickoffTests.startBody.replacingOccurrences(of: "team:ARS", with: topic))
            #expect(refused.status == 403 && refused.errorCode == "follow_topic_not_allowed" && refused.text.contains(topic), "\(refused.text)")
        }
        let own = try acme.request("POST", "/v1/channels/acme-1/start", json: GatewayKickoffTests.startBody.replacingOccurrences(of: "team:ARS", with: "channel:acme-1"))
        #expect(own.status == 202, "\(own.text)")
        _ = try await GatewayDeadLetterTests.finished(try #require(own.json?.string("jobId")), on: api)
        // The admin key may address any topic.
        let admin = try api.request("POST", "/v1/channels/acme-1/start", json: GatewayKickoffTests.startBody.replacingOccurrences(of: "team:ARS", with: "channel:beta-x"))
        _ = try await GatewayDeadLetterTests.finished(try #require(admin.json?.string("jobId")), on: api)
        let starts = fixture.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(starts.compactMap(\.deviceToken) .sorted() == [GatewayPersonalAPITests.token(1), GatewayPersonalAPITests.token(2)].sorted(),
                "the beta fan only by the admin's kickoff")
        let metrics = try api.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_key_limit_refusals_total{scope="acme-",limit="follow_topic"} 2"#), "\(metrics)")
    }

    /// A provider key's channels are capped (deleting one makes room), its kickoffs and rollovers
    /// come from one bucket, and a channel rolls over at most once per interval, also across a
    /// restart; the admin key is not capped or bucketed, but the interval is the channel's.
    @Test(.heavy) func channelsStartsAndRolloversAreBoundedPerKey() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let limits = { (configuration: inout GatewayConfiguration) in
            configuration.apiKeys.append(Self.provider)
            configuration.keyLimits = KeyLimits(channels: 2, startsPerHour: 1, startBurst: 3, rolloverInterval: .seconds(3600))
        }
        let first = try GatewayFixture(directory: directory, configure: limits)
        let api = first.admin
        let acme = GatewayTestClient(port: first.port, key: Self.provider.key)
        let channel = #"{"id": "acme-1", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#
        #expect(try acme.request("POST", "/v1/channels", json: channel).status == 201)
        #expect(try acme.request("POST", "/v1/channels", json: channel).status == 200, "a repeat holds no more")
        #expect(try acme.request("POST", "/v1/channels", json: #"{"id": "acme-2", "storagePolicy": "no-storage"}"#).status == 201)
        let full = try acme.request("POST", "/v1/channels", json: #"{"id": "acme-3", "storagePolicy": "no-storage"}"#)
        #expect(full.status == 409 && full.errorCode == "key_channel_limit" && full.text.contains("2"), "\(full.text)")
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "acme-admin", "storagePolicy": "no-storage"}"#).status == 201,
                "the admin key is not capped (its channel counts for the key whose prefix covers it)")
        #expect(try acme.request("DELETE", "/v1/channels/acme-2").status == 200)
        #expect(try acme.request("POST", "/v1/channels", json: #"{"id": "acme-3", "storagePolicy": "no-storage"}"#).status == 409,
                "acme-admin is in its scope too")

        // Kickoffs and rollovers share the bucket of three.
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(1), follows: "channel:acme-1", user: "fan", on: api)
        let body = GatewayKickoffTests.startBody.replacingOccurrences(of: "team:ARS", with: "channel:acme-1")
        #expect(try acme.request("POST", "/v1/channels/acme-1/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        for _ in 0..<2 {
            let kickoff = try acme.request("POST", "/v1/channels/acme-1/start", json: body)
            _ = try await GatewayDeadLetterTests.finished(try #require(kickoff.json?.string("jobId"), "\(kickoff.text)"), on: api)
        }
        #expect(try acme.request("POST", "/v1/channels/acme-1/rollover").status == 202)
        let spent = try acme.request("POST", "/v1/channels/acme-1/start", json: body)
        #expect(spent.status == 429 && spent.errorCode == "start_rate_limited", "\(spent.text)")
        let spentRetry = try #require(spent.header("Retry-After").flatMap { Int($0) })
        #expect((1...3600).contains(spentRetry))
        try await eventually("the rollover over") {
            (try? api.request("GET", "/v1/channels/acme-1").json?[member: "rollover"]?.string("stage")) == "live"
        }
        // Too soon after the last rollover, whoever asks; still so after a restart.
        let soon = try api.request("POST", "/v1/channels/acme-1/rollover")
        #expect(soon.status == 429 && soon.errorCode == "rollover_too_soon", "\(soon.text)")
        let soonRetry = try #require(soon.header("Retry-After").flatMap { Int($0) })
        #expect((3500...3600).contains(soonRetry), "the interval from the last rollover's start")
        await first.shutDown(removingData: false)
        let second = try GatewayFixture(directory: directory, configure: limits)
        defer { Task { await second.shutDown() } }
        let again = try second.admin.request("POST", "/v1/channels/acme-1/rollover")
        #expect(again.status == 429 && again.errorCode == "rollover_too_soon", "\(again.text)")
        let metrics = try second.admin.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_key_limit_refusals_total{scope="admin",limit="rollover_interval"} 1"#), "\(metrics)")
    }
}
