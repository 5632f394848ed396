import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// Every webhook event type end to end: a real gateway, the mock APNs made to produce the fact,
/// and a real local receiver; each test checks the event's `data` as docs/api.md documents it.
@Suite("Gateway webhook events", .heavy)
struct GatewayWebhookEventTests {
    /// A gateway against its own mock APNs (for faults the bundled mock cannot be given), with
    /// webhooks to `receiver`.
    static func gateway(_ apns: MockAPNsFixture, _ receiver: WebhookTestReceiver,
                        settings: GatewayConfiguration.APNsSettings? = nil) throws -> GatewayFixture {
        try GatewayFixture(apns: settings ?? apns.gatewaySettings, directory: apns.directory + "/data",
                           webhooks: try GatewayWebhookTests.settings(url: receiver.url))
    }

    /// Waits for the first event of `type` and returns its `data`.
    static func data(of type: String, at receiver: WebhookTestReceiver) async throws -> JSONValue {
        try await eventually("a \(type) event") { !receiver.events(type).isEmpty }
        return try #require(receiver.events(type).first?[member: "data"])
    }

    @Test("channel.ended and channel.deleted carry the channel's id and APNs id")
    func endedAndDeleted() async throws {
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        let fixture = try GatewayFixture(webhooks: try GatewayWebhookTests.settings(url: receiver.url))
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "end-1", "storagePolicy": "no-storage", "policy": {"endGracePeriodSeconds": 0}}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        #expect(try api.request("POST", "/v1/channels/end-1/end", json: #"{"finalState": {"done": true}}"#).status == 202)

        let ended = try await Self.data(of: "channel.ended", at: receiver)
        #expect(ended == ["channelId": "end-1", "apnsChannelId": .string(apnsID)])
        let deleted = try await Self.data(of: "channel.deleted", at: receiver)
        #expect(deleted == ["channelId": "end-1", "apnsChannelId": .string(apnsID)])
        #expect(fixture.mock.channels()[apnsID] == nil, "the event reports a deletion APNs confirmed")
        #expect(receiver.events("channel.ended").count == 1 && receiver.events("channel.deleted").count == 1)
    }

    @Test("channel.broken when APNs answers ChannelNotRegistered")
    func broken() async throws {
        let apns = try MockAPNsFixture()
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        let fixture = try Self.gateway(apns, receiver)
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "gone", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        // Deleted at APNs behind the gateway's back: the next broadcast is answered ChannelNotRegistered.
        _ = try await apns.client.deleteChannel(apnsID)
        #expect(try api.request("POST", "/v1/channels/gone/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)

        let data = try await Self.data(of: "channel.broken", at: receiver)
        #expect(data.string("channelId") == "gone")
        #expect(data.string("apnsChannelId") == apnsID)
        #expect(data.string("reason")?.contains("ChannelNotRegistered") == true, "\(data)")
        #expect(receiver.events("channel.broken").count == 1)
    }

    @Test("channel.budget_exhausted once per channel and hour, with the budget and the downgrades")
    func budgetExhausted() async throws {
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        let fixture = try GatewayFixture(webhooks: try GatewayWebhookTests.settings(url: receiver.url))
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: """
            {"id": "budget", "storagePolicy": "no-storage", "attributes": \(GatewayFixture.matchAttributes),
             "policy": {"priorityBudgetPerHour": 1, "minimumIntervalSeconds": 0.001, "burst": 100}}
            """)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        // Three goals, each pushed before the next: one at priority 10, two downgraded to 5.
        for (seq, minute) in [(1, 10), (2, 20), (3, 30)] {
            #expect(try api.request("POST", "/v1/channels/budget/events", json: """
                {"seq": \(seq), "type": "goal", "team": "home", "player": "Saka", "minute": \(minute)}
                """).status == 202)
            try await eventually("goal \(seq) at APNs") {
                fixture.mock.recordedRequests().filter { $0.channelID == apnsID && $0.endpoint == .broadcast }.count == seq
            }
        }
        let priorities = fixture.mock.recordedRequests().filter { $0.channelID == apnsID && $0.endpoint == .broadcast }.map(\.priority)
        #expect(priorities == [10, 5, 5])

        let data = try await Self.data(of: "channel.budget_exhausted", at: receiver)
        #expect(data.string("channelId") == "budget")
        #expect(data.string("apnsChannelId") == apnsID)
        #expect(data.integer("priorityBudgetPerHour") == 1)
        #expect((data.integer("budgetDowngrades") ?? 0) >= 1)
        // Every downgrade saved by now (the channel's saves follow the answers): still one event.
        try await eventually("the second downgrade counted") {
            (try? api.request("GET", "/metrics").text.contains(#"touchline_budget_downgrades_total{channel="budget"} 2"#)) == true
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.events("channel.budget_exhausted").count == 1)
    }

    @Test("channel.limit_reached names the create refused, once per five minutes")
    func limitReached() async throws {
        let apns = try MockAPNsFixture { $0.channelLimit = 1 }
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        let fixture = try Self.gateway(apns, receiver)
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "one", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "two", "storagePolicy": "no-storage"}"#).status == 409)
        let data = try await Self.data(of: "channel.limit_reached", at: receiver)
        #expect(data == ["channelId": "two"])
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "three", "storagePolicy": "no-storage"}"#).status == 409)
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.events("channel.limit_reached").count == 1)
    }

    @Test("apns.credentials_rejected when APNs does not know the gateway's key")
    func credentialsRejected() async throws {
        let apns = try MockAPNsFixture()
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        // A key of the right shape that the mock was not given: InvalidProviderToken.
        let stranger = try MockAPNsProviderKeyFiles.generate(keyID: "STRANGER01", in: apns.directory + "/stranger")
        var settings = apns.gatewaySettings
        settings.keyPath = stranger.privateKeyFile
        settings.keyID = "STRANGER01"
        let fixture = try Self.gateway(apns, receiver, settings: settings)
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "nokey", "storagePolicy": "no-storage"}"#).status == 502)
        let data = try await Self.data(of: "apns.credentials_rejected", at: receiver)
        #expect(data == ["reason": "InvalidProviderToken", "pool": "management"])
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "nokey-2", "storagePolicy": "no-storage"}"#).status == 502)
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.events("apns.credentials_rejected").count == 1, "one per reason per five minutes")
    }

    @Test("personal.job.finished with counts by outcome, personal.deadletters.created with the reasons")
    func personalJob() async throws {
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        let fixture = try GatewayFixture(webhooks: try GatewayWebhookTests.settings(url: receiver.url))
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        for n in 0..<3 { try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(n), follows: "team:ARS", user: "fan-\(n)", on: api) }
        for n in 0..<2 { try GatewayDeadLetterTests.register(GatewayDeadLetterTests.badToken(n), follows: "team:ARS", user: "bad-\(n)", on: api) }
        GatewayDeadLetterTests.disownBadTokens([0, 1], on: fixture)
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: api)

        let finished = try await Self.data(of: "personal.job.finished", at: receiver)
        #expect(finished == ["jobId": .string(job.id), "targeted": 5, "sent": 3, "failed": ["BadDeviceToken": 2], "expired": 0, "pending": 0])
        try await eventually("the dead letters' events") {
            receiver.events("personal.deadletters.created").compactMap { $0[member: "data"]?.integer("count") }.reduce(0, +) >= 2
        }
        let letters = receiver.events("personal.deadletters.created").compactMap { $0[member: "data"] }
        #expect(letters.allSatisfy { $0.string("jobId") == job.id })
        #expect(letters.compactMap { $0.integer("count") }.reduce(0, +) == 2)
        #expect(letters.compactMap { $0[member: "reasons"]?.integer("BadDeviceToken") }.reduce(0, +) == 2)
        #expect(letters.allSatisfy { $0[member: "reasons"].map { if case .object(let members) = $0 { members.count == 1 } else { false } } == true })
        #expect(receiver.events("personal.job.finished").count == 1)
    }
}

extension WebhookTestReceiver {
    /// The documents of the events of `type` received so far, each once however often it was
    /// delivered (a delivery whose answer came late, on a busy machine, is sent again: at least
    /// once is the contract).
    func events(_ type: String) -> [JSONValue] {
        var seen = Set<String>()
        return requests.filter { $0.header("Touchline-Event-Type") == type }.compactMap { try? JSONParser.parse($0.body) }
            .filter { seen.insert($0.string("id") ?? UUID().uuidString).inserted }
    }
}
