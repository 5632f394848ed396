import Foundation
import Testing
import TestSlots
import TouchlineCore

/// Scheduled kickoffs: `POST /v1/channels/{id}/start` with `at` stores the start at once and
/// sends it at its time, also after a restart; it is listed while it waits and can be cancelled
/// until it starts; a time in the past or too far ahead is refused and stores nothing (in
/// process on the in-memory backends).
@Suite("Gateway scheduled kickoffs", .gatewaysInProcess)
struct GatewayScheduledKickoffTests {
    static func body(at seconds: Int64, extra: String = "") -> String {
        #"{"audience": {"follows": "team:ARS"}, "attributesType": "MatchAttributes", "attributes": \#(GatewayFixture.matchAttributes), "#
            + #""alert": {"title": "Kick-off", "body": "ARS v CHE"}, "at": \#(seconds)\#(extra)}"#
    }

    static func prepare(_ fixture: GatewayFixture, fans: Int = 3) throws -> String {
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "club-sched", "storagePolicy": "no-storage"}"#)
        for n in 0..<fans { try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(n), follows: "team:ARS", user: "fan-\(n)", on: api) }
        return try #require(created.json?.string("apnsChannelId"), "\(created.text)")
    }

    static func starts(_ fixture: GatewayFixture) -> Int {
        fixture.mock.recordedRequests().filter { $0.endpoint == .device && $0.event == "start" }.count
    }

    @Test(.heavy) func aScheduledStartWaitsIsListedAndGoesAtItsTime() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let apnsID = try Self.prepare(fixture)
        let api = fixture.admin
        let at = Int64(Date().timeIntervalSince1970) + 2
        let scheduled = try api.request("POST", "/v1/channels/club-sched/start", json: Self.body(at: at))
        #expect(scheduled.status == 202 && scheduled.json?[member: "at"] == .integer(at), "\(scheduled.text)")
        let jobID = try #require(scheduled.json?.string("jobId"))
        let listed = try api.request("GET", "/v1/channels/club-sched/starts").json?[member: "starts"]
        #expect(listed == [["jobId": .string(jobID), "at": .integer(at), "audience": ["follows": "team:ARS"]]], "\(String(describing: listed))")
        #expect(try Self.starts(fixture) == 0 && api.request("GET", "/v1/personal/\(jobID)").json?.string("status") == "pending")

        let progress = try await GatewayDeadLetterTests.finished(jobID, on: api)
        #expect(progress?.integer("sent") == 3)
        #expect(Date().timeIntervalSince1970 >= Double(at) - 0.05, "not before its time")
        let start = try #require(fixture.mock.recordedRequests().first { $0.endpoint == .device })
        #expect(try JSONParser.parse(start.body)[member: "aps"]?.string("input-push-channel") == apnsID)
        #expect(try api.request("GET", "/v1/channels/club-sched/starts").json?[member: "starts"] == [])
        let late = try api.request("DELETE", "/v1/channels/club-sched/starts/\(jobID)")
        #expect(late.status == 409 && late.errorCode == "start_not_waiting", "\(late.text)")
    }

    /// A clock a minute behind the real one: on it, a start due in seconds is a minute away.
    struct MinuteBehindClock: WallClock {
        func now() -> UnixTime { SystemClock().now() + .seconds(-60) }
    }

    @Test(.heavy) func aCancelledStartIsNeverSentAndARestartKeepsTheOthers() async throws {
        // The first gateway runs a minute behind, so the kept start cannot become due on it
        // however slow its shutdown is beside a full parallel run (with the real clock, the
        // start was once sent by the first gateway while it shut down, 8 s after it was asked).
        let first = try GatewayFixture(clock: MinuteBehindClock())
        let data = first.directory
        _ = try Self.prepare(first)
        let api = first.admin
        let now = Int64(Date().timeIntervalSince1970)
        let cancelled = try #require(try api.request("POST", "/v1/channels/club-sched/start", json: Self.body(at: now + 3)).json?.string("jobId"))
        let kept = try #require(try api.request("POST", "/v1/channels/club-sched/start", json: Self.body(at: now + 8)).json?.string("jobId"))
        let cancel = try api.request("DELETE", "/v1/channels/club-sched/starts/\(cancelled)")
        #expect(cancel.status == 200 && cancel.json?.string("status") == "cancelled", "\(cancel.text)")
        #expect(try api.request("GET", "/v1/personal/\(cancelled)").json?.string("status") == "cancelled")
        #expect(try api.request("DELETE", "/v1/channels/club-sched/starts/\(cancelled)").status == 409)
        #expect(Self.starts(first) == 0)
        await first.shutDown(removingData: false)

        // The store keeps the waiting start across the restart; the cancelled one stays cancelled.
        let second = try GatewayFixture(directory: data)
        defer { Task { await second.shutDown() } }
        let progress = try await GatewayDeadLetterTests.finished(kept, on: second.admin)
        #expect(progress?.integer("sent") == 3)
        try await Task.sleep(for: .milliseconds(300))
        #expect(Self.starts(second) == 3, "the kept start only")
        #expect(try second.admin.request("GET", "/v1/personal/\(cancelled)").json?.string("status") == "cancelled")
    }

    @Test func aTimeInThePastTooFarAheadOrBeforeTheExpirationIsRefused() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        _ = try Self.prepare(fixture)
        let now = Int64(Date().timeIntervalSince1970)
        for (body, message) in [(Self.body(at: now - 10), "'at' must be in the future"), (Self.body(at: now + 8 * 86_400), "at most 7 days ahead"),
                                (Self.body(at: now + 600, extra: #", "expiration": \#(now + 300)"#), "'expiration' must be after 'at'")] {
            let refused = try fixture.admin.request("POST", "/v1/channels/club-sched/start", json: body)
            #expect(refused.status == 400 && refused.errorCode == "invalid_field" && refused.text.contains(message), "\(refused.text)")
        }
        #expect(try fixture.admin.request("GET", "/v1/channels/club-sched/starts").json?[member: "starts"] == [])
    }
}
