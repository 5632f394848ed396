import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime

/// Ending a channel cancels its kickoffs: no start naming it is sent once the end is durable
/// (beyond those already in flight), the rest of the audience counts as expired, and the APNs
/// deletion waits for the starts in flight, so no start ever names a deleted channel.
@Suite("Gateway kickoff cancellation", .heavy)
struct GatewayKickoffCancellationTests {
    @Test func endingAChannelCancelsItsKickoffBeforeTheDeletion() async throws {
        // 4 sends in flight, each answered after 250 ms: the 400 starts take 25 s, far longer
        // than the test needs to end the channel, however loaded the machine.
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(250) }
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data", maxBodyBytes: 1 << 20,
                                         personalQueue: PersonalQueueSettings(maxInFlight: 4))
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "k1", "storagePolicy": "no-storage", "policy": {"endGracePeriodSeconds": 0}}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        let tokens = (0..<400).map(GatewayPersonalAPITests.token)
        let registrations = tokens.map { #"{"token": "\#($0)", "kind": "push-to-start", "follows": ["team:ARS"]}"# }.joined(separator: ",")
        #expect(try api.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(registrations)]}"#).status == 201)

        let started = try api.request("POST", "/v1/channels/k1/start", json: GatewayKickoffTests.startBody)
        let jobID = try #require(started.json?.string("jobId"), "\(started.text)")
        func starts() -> [MockAPNsRecordedRequest] { apns.mock.recordedRequests().filter { $0.endpoint == .device } }
        try await eventually("the kickoff under way") { starts().count >= 20 }
        #expect(try api.request("POST", "/v1/channels/k1/end").status == 202)
        let atEnd = starts().count

        let progress = try await GatewayDeadLetterTests.finished(jobID, on: api)
        let sent = try #require(progress?.integer("sent")), expired = try #require(progress?.integer("expired"))
        #expect(progress?.integer("targeted") == 400 && sent + expired == 400, "\(progress.map { String(decoding: $0.encoded, as: UTF8.self) } ?? "")")
        #expect(expired > 0 && sent < 400)
        // At most the sends already in flight when the end committed arrive after it.
        #expect(starts().count <= atEnd + 4, "\(starts().count) starts, \(atEnd) at the end")
        try await eventually("the APNs channel deleted") { apns.mock.channels()[apnsID] == nil }
        let recorded = apns.mock.recordedRequests()
        let deletion = try #require(recorded.lastIndex { $0.endpoint == .deleteChannel })
        #expect(!recorded[deletion...].contains { $0.endpoint == .device }, "a start reached APNs after the channel's deletion")
        let kickoff = try api.request("POST", "/v1/channels/k1/start", json: GatewayKickoffTests.startBody)
        #expect(kickoff.status == 409 && kickoff.errorCode == "channel_not_active")
    }

    /// A kickoff cancelled while none of its starts is in flight (every free slot taken by
    /// another job) ends at once, and its end is saved: it is `done`, not `running` for ever.
    @Test func aKickoffCancelledWithNothingInFlightIsSavedDone() async throws {
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(250) }
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data", maxBodyBytes: 1 << 20,
                                         personalQueue: PersonalQueueSettings(maxInFlight: 1))
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        for id in ["k1", "k2"] {
            let created = try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage", "policy": {"endGracePeriodSeconds": 0}}"#)
            #expect(created.status == 201, "\(created.text)")
        }
        let tokens = (0..<100).map(GatewayPersonalAPITests.token)
        let registrations = tokens.map { #"{"token": "\#($0)", "kind": "push-to-start", "follows": ["team:ARS"]}"# }.joined(separator: ",")
        #expect(try api.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(registrations)]}"#).status == 201)
        // The first kickoff holds the one send slot; the second waits for it with nothing in flight.
        let first = try #require(try api.request("POST", "/v1/channels/k1/start", json: GatewayKickoffTests.startBody).json?.string("jobId"))
        try await eventually("the first kickoff under way") { apns.mock.recordedRequests().contains { $0.endpoint == .device } }
        let second = try #require(try api.request("POST", "/v1/channels/k2/start", json: GatewayKickoffTests.startBody).json?.string("jobId"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(try api.request("POST", "/v1/channels/k2/end").status == 202)

        let progress = try await GatewayDeadLetterTests.finished(second, on: api)
        #expect(progress?.integer("expired") == 100 && progress?.integer("sent") == 0, "\(String(describing: progress))")
        #expect(try api.request("GET", "/v1/personal/\(first)").json?.string("status") != "done", "the first kickoff still runs")
    }

    /// A stored job that fails its check at start is never run and is shown as broken; the
    /// other jobs run.
    @Test func aDamagedStoredJobIsShownBrokenAndNeverSent() async throws {
        let first = try GatewayFixture()
        let data = first.directory
        let token = GatewayPersonalAPITests.token(7)
        try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan", on: first.admin)
        await first.shutDown(removingData: false)
        let raw = try SQLiteConnection(path: data + "/personal.sqlite")
        for (id, audience, payload) in [("job-bad-audience", "{{", #"{"aps":{"event":"update","content-state":{}}}"#),
                                        ("job-bad-payload", #"{"token":"\#(token)"}"#, "not json"),
                                        ("job-good", #"{"token":"\#(token)"}"#, #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#)] {
            try raw.run("""
                INSERT INTO personal_jobs (id, created_at, audience, payload, priority, status, targeted, sent, failed, expired, pending, updated_at)
                VALUES (?, 1, ?, ?, 10, 'pending', 0, 0, '{}', 0, 0, 1)
                """, [.text(id), .text(audience), .blob(Array(payload.utf8))])
        }
        raw.close()

        let second = try GatewayFixture(directory: data)
        defer { Task { await second.shutDown() } }
        let api = second.admin
        _ = try await GatewayDeadLetterTests.finished("job-good", on: api)
        try await eventually("the broken jobs reported") {
            (try? api.request("GET", "/v1/personal/job-bad-payload").json?.string("status")) == "broken"
        }
        for (id, reason) in [("job-bad-audience", "audience"), ("job-bad-payload", "payload")] {
            let shown = try api.request("GET", "/v1/personal/\(id)").json
            #expect(shown?.string("status") == "broken" && shown?.string("brokenReason")?.contains(reason) == true, "\(id)")
        }
        #expect(second.mock.recordedRequests().filter { $0.endpoint == .device }.count == 1, "only the good job was sent")
        #expect(try api.request("GET", "/metrics", key: .some(nil)).text.contains(#"touchline_damaged_records{kind="personal_job"} 2"#))
    }
}
