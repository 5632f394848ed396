import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Webhooks end to end: a gateway with the bundled mock APNs posts to a real local receiver (the
/// `/v1/events` refusals in process on the in-memory backends).
@Suite("Gateway webhooks", .gatewaysInProcess)
struct GatewayWebhookTests {
    static let secret = "whsec-0123456789abcdef"

    static func settings(url: String) throws -> WebhookSettings {
        WebhookSettings(endpoints: [.init(name: "receiver", url: try WebhookURL(parsing: url), secret: Array(secret.utf8),
                                          events: Set(WebhookEventType.allCases))],
                        retry: WebhookRetryPolicy(backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(100), multiplier: 2, jitter: 0.5)),
                        requestTimeout: .seconds(2))
    }

    /// Creates a channel and deletes it: one `channel.deleted` event, in the delete's commit.
    static func createAndDelete(_ id: String, on api: GatewayTestClient) throws {
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#)
        #expect(created.status == 201, "\(created.text)")
        let deleted = try api.request("DELETE", "/v1/channels/\(id)")
        #expect(deleted.status == 200, "\(deleted.text)")
    }

    @Test("a receiver that fails three times gets the event once more after recovery, signed, and the same event is pulled from /v1/events", .heavy)
    func retriesUntilDelivered() async throws {
        let receiver = try WebhookTestReceiver.listening { $0 < 3 ? 500 : 200 }
        defer { receiver.stop() }
        let fixture = try GatewayFixture(webhooks: try Self.settings(url: receiver.url))
        defer { Task { await fixture.shutDown() } }
        try Self.createAndDelete("hooked-1", on: fixture.admin)

        try await eventually("four attempts") { receiver.requests.count >= 4 }
        // Time for a wrong extra delivery to show up: the back-off is at most 100 ms.
        try await Task.sleep(for: .milliseconds(600))
        let requests = receiver.requests
        #expect(requests.count == 4, "\(requests.map(\.status))")
        let ids = Set(requests.compactMap { $0.header("Touchline-Event-Id") })
        #expect(ids.count == 1)
        #expect(requests.filter { (200..<300).contains($0.status) }.count == 1)
        #expect(requests.allSatisfy { $0.head.hasPrefix("POST /hooks/touchline?source=test HTTP/1.1") })

        for request in requests {
            let signature = try #require(request.header("Touchline-Signature"))
            let parts = Dictionary(uniqueKeysWithValues: signature.split(separator: ",").map { part in
                let pair = part.split(separator: "=", maxSplits: 1)
                return (String(pair[0]), String(pair[1]))
            })
            let timestamp = try #require(parts["t"])
            let expected = try opensslHMAC(key: Self.secret, message: Array("\(timestamp).".utf8) + request.body)
            #expect(parts["v1"] == expected, "signature \(signature) for \(String(decoding: request.body, as: UTF8.self))")
            #expect(abs((Int64(timestamp) ?? 0) - Int64(Date().timeIntervalSince1970)) < 60)
        }
        let event = try #require(try? JSONParser.parse(requests[3].body))
        #expect(event.string("type") == "channel.deleted")
        #expect(event.string("id") == ids.first)
        #expect(event[member: "data"]?.string("channelId") == "hooked-1")

        let pulled = try fixture.admin.request("GET", "/v1/events?limit=10")
        #expect(pulled.status == 200, "\(pulled.text)")
        guard case .array(let events)? = pulled.json?[member: "events"] else { Issue.record("no events: \(pulled.text)"); return }
        #expect(events.compactMap { $0.string("id") } == [ids.first!])
        // The next page after the cursor is empty, and still carries a cursor.
        let next = try #require(pulled.json?.string("next"))
        let after = try fixture.admin.request("GET", "/v1/events?after=\(next)")
        #expect(after.json?[member: "events"] == .array([]) && after.json?.string("next") == next, "\(after.text)")

        let metrics = try fixture.admin.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_webhook_deliveries_total{endpoint="receiver"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"touchline_webhook_failed_attempts_total{endpoint="receiver"} 3"#))
        #expect(metrics.contains(#"touchline_webhook_pending{endpoint="receiver"} 0"#))
    }

    @Test("a delivery pending at shutdown is delivered after the restart, once", .heavy)
    func pendingSurvivesRestart() async throws {
        let receiver = try WebhookTestReceiver()
        defer { receiver.stop() }
        let settings = try Self.settings(url: receiver.url)
        let first = try GatewayFixture(webhooks: settings)
        try Self.createAndDelete("hooked-2", on: first.admin)
        // Refused while the receiver is down: the delivery is pending with attempts behind it.
        try await eventually("a failed attempt") {
            (try? first.admin.request("GET", "/metrics").text.contains(#"touchline_webhook_pending{endpoint="receiver"} 1"#)) == true
                && (try? first.admin.request("GET", "/metrics").text.contains(#"touchline_webhook_failed_attempts_total{endpoint="receiver"} 0"#)) == false
        }
        await first.shutDown(removingData: false)
        receiver.listen()
        let second = try GatewayFixture(directory: first.directory, webhooks: settings)
        defer { Task { await second.shutDown() } }
        try await eventually("the delivery after the restart") { receiver.requests.count >= 1 }
        try await Task.sleep(for: .milliseconds(600))
        #expect(receiver.requests.count == 1)
        let event = try #require(try? JSONParser.parse(receiver.requests[0].body))
        #expect(event[member: "data"]?.string("channelId") == "hooked-2")
    }

    @Test("an attempt in flight at shutdown is answered within the grace and not sent again after the restart", .heavy)
    func attemptInFlightAtShutdownIsNotRepeated() async throws {
        let receiver = try WebhookTestReceiver.listening(delay: .milliseconds(700))
        defer { receiver.stop() }
        let settings = try Self.settings(url: receiver.url)
        let first = try GatewayFixture(webhooks: settings)
        try Self.createAndDelete("hooked-3", on: first.admin)
        try await eventually("the attempt to arrive") { receiver.requests.count == 1 }
        // Shut down while the receiver holds its answer back.
        await first.shutDown(removingData: false)
        let second = try GatewayFixture(directory: first.directory, webhooks: settings)
        defer { Task { await second.shutDown() } }
        try await Task.sleep(for: .milliseconds(800))
        #expect(receiver.requests.count == 1, "the delivery answered during the grace went again")
        #expect(try second.admin.request("GET", "/metrics").text.contains(#"touchline_webhook_pending{endpoint="receiver"} 0"#))
    }

    @Test("events older than the retention are pruned while the gateway runs, not once a minute", .heavy)
    func oldEventsArePruned() async throws {
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        var settings = try Self.settings(url: receiver.url)
        settings.retention = .seconds(1)
        let fixture = try GatewayFixture(webhooks: settings)
        defer { Task { await fixture.shutDown() } }
        func stored() -> Int? {
            guard case .array(let events)? = try? fixture.admin.request("GET", "/v1/events").json?[member: "events"] else { return nil }
            return events.count
        }
        // Twice: the second prune follows the first by seconds, not by a fixed minute.
        for round in 1...2 {
            try Self.createAndDelete("pruned-\(round)", on: fixture.admin)
            try await eventually("delivery \(round)") { receiver.requests.count == round }
            try await eventually("the events pruned", timeout: .seconds(10)) { stored() == 0 }
        }
    }

    @Test("an endpoint whose receiver stalls does not hold up another endpoint's deliveries", .heavy)
    func aStalledEndpointDoesNotDelayAnother() async throws {
        // Answers one connection at a time, each after 30 s: its endpoint's slots stay taken for
        // longer than the test can take, however loaded the machine.
        let slow = try WebhookTestReceiver(delay: .seconds(30))
        let fast = try WebhookTestReceiver()
        slow.listen()
        fast.listen()
        defer { slow.stop(); fast.stop() }
        var settings = try Self.settings(url: fast.url)
        settings.endpoints[0].name = "fast"
        settings.endpoints.append(.init(name: "slow", url: try WebhookURL(parsing: slow.url), secret: Array(Self.secret.utf8),
                                        events: Set(WebhookEventType.allCases)))
        settings.requestTimeout = .seconds(40)
        let fixture = try GatewayFixture(webhooks: settings)
        defer { Task { await fixture.shutDown() } }
        for n in 1...6 { try Self.createAndDelete("both-\(n)", on: fixture.admin) }
        // Every event reaches the fast receiver while the slow one still sits on its first.
        try await eventually("the fast endpoint's deliveries", timeout: .seconds(20)) { fast.requests.count == 6 }
        #expect(slow.requests.count == 1)
        #expect(Set(fast.events("channel.deleted").compactMap { $0[member: "data"]?.string("channelId") }) == Set((1...6).map { "both-\($0)" }))
    }

    @Test("/v1/events needs an admin key and a cursor it gave")
    func eventsRouteRefusals() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let club = fixture.client(key: GatewayFixture.clubKey)
        #expect(try club.request("GET", "/v1/events").status == 403)
        let bad = try fixture.admin.request("GET", "/v1/events?after=nonsense")
        #expect(bad.status == 400 && bad.errorCode == "invalid_cursor", "\(bad.text)")
        let limit = try fixture.admin.request("GET", "/v1/events?limit=0")
        #expect(limit.status == 400 && limit.errorCode == "invalid_query", "\(limit.text)")
    }
}
