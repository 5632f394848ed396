import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime

/// Nothing stored can stop the next start: a record that fails validation is restored as a
/// broken channel that names what is wrong, and every other channel is served.
@Suite("Gateway damaged records", .heavy)
struct GatewayDamagedRecordTests {
    @Test func damagedChannelsAreServedAsBrokenAndTheRestAsUsual() async throws {
        let first = try GatewayFixture()
        let data = first.directory
        let damaged: [(id: String, sql: String, reason: String)] = [
            ("c-policy", #"UPDATE channels SET policy = '{"policy":{"freshnessSeconds":0}}' WHERE id = 'c-policy'"#, "freshnessSeconds"),
            ("c-snapshot", "UPDATE channels SET engine_snapshot = x'7b7b' WHERE id = 'c-snapshot'", "engine snapshot"),
            ("c-state", #"UPDATE channels SET content_state = x'7b2261223a' WHERE id = 'c-state'"#, "content-state"),
            ("c-status", "UPDATE channels SET status = 'exploded' WHERE id = 'c-status'", "exploded"),
            ("c-seq", "UPDATE channels SET last_seq = 9223372036854775807 WHERE id = 'c-seq'", "last seq"),
        ]
        for id in ["c-good"] + damaged.map(\.id) {
            let created = try first.admin.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#)
            #expect(created.status == 201, "\(created.text)")
        }
        await first.shutDown(removingData: false)
        let raw = try SQLiteConnection(path: data + "/touchline.sqlite")
        try raw.execute("PRAGMA ignore_check_constraints = ON")
        for record in damaged { try raw.execute(record.sql) }
        raw.close()

        let second = try GatewayFixture(directory: data)
        defer { Task { await second.shutDown() } }
        let api = second.admin
        #expect(try api.request("GET", "/v1/channels/c-good").json?.string("status") == "active")
        #expect(try api.request("POST", "/v1/channels/c-good/events", json: #"{"seq": 1, "patch": {"a": 1}}"#).status == 202)
        for record in damaged {
            let shown = try api.request("GET", "/v1/channels/\(record.id)")
            #expect(shown.json?.string("status") == "broken", "\(record.id): \(shown.text)")
            #expect(shown.json?.string("brokenReason")?.contains(record.reason) == true, "\(record.id): \(shown.text)")
            let refused = try api.request("POST", "/v1/channels/\(record.id)/events", json: #"{"seq": 1, "patch": {"a": 1}}"#)
            #expect(refused.status == 409 && refused.errorCode == "channel_broken", "\(record.id): \(refused.text)")
        }
        #expect(try api.request("GET", "/metrics", key: .some(nil)).text.contains(#"touchline_damaged_records{kind="channel"} 5"#))
        // An operator can remove a damaged channel (and its APNs channel) like any other.
        let apnsID = try #require(try api.request("GET", "/v1/channels/c-policy").json?.string("apnsChannelId"))
        #expect(try api.request("DELETE", "/v1/channels/c-policy").status == 200)
        #expect(second.mock.channels()[apnsID] == nil)
        #expect(try api.request("GET", "/readyz", key: .some(nil)).status == 200)
    }

    /// A token an older version stored without today's checks (odd length) is dead-lettered as
    /// broken, never sent for APNs to refuse; the other followers get their push.
    @Test func aMalformedStoredTokenIsDeadLetteredNotSent() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(1), follows: "team:ARS", user: "fan", on: api)
        let odd = String(repeating: "a", count: 65)
        let raw = try SQLiteConnection(path: fixture.directory + "/personal.sqlite")
        try raw.run("INSERT INTO tokens (token, kind, environment, registered_at, active) VALUES (?, 'pushToStart', 'production', 1, 1)",
                    [.text(odd)])
        try raw.run("INSERT INTO token_follows (follow, token) VALUES ('team:ARS', ?)", [.text(odd)])
        raw.close()
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: api)
        #expect(job.progress?.integer("sent") == 1)
        #expect(job.progress?[member: "failed"] == .object([.init("InvalidStoredToken", .integer(1))]))
        #expect(fixture.mock.recordedRequests().filter { $0.endpoint == .device }.count == 1)
    }
}
