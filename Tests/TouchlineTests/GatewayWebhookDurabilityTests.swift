import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// Webhook events are exactly as durable as their facts: a failed commit leaves neither, its
/// retry leaves one of each, and a `kill -9` of the real binary loses no pending delivery.
@Suite("Gateway webhook durability", .heavy)
struct GatewayWebhookDurabilityTests {
    @Test("a failed commit records neither the deletion nor its event; the retried deletion records exactly one")
    func failedCommitRecordsNoEvent() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fault = directory + "/disk-full"
        let receiver = try WebhookTestReceiver.listening()
        defer { receiver.stop() }
        let fixture = try GatewayFixture(directory: directory + "/data", webhooks: try GatewayWebhookTests.settings(url: receiver.url),
                                         storeFaultFile: fault)
        defer { Task { await fixture.shutDown(removingData: false) } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "f-del", "storagePolicy": "no-storage"}"#).status == 201)

        #expect(FileManager.default.createFile(atPath: fault, contents: Data()))
        let failed = try api.request("DELETE", "/v1/channels/f-del")
        #expect(failed.status == 503 && failed.errorCode == "store_unavailable", "\(failed.text)")
        // Neither the fact (the channel is still there) nor its event (not sent, not stored).
        #expect(try api.request("GET", "/v1/channels/f-del").status == 200)
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.requests.isEmpty)
        #expect(try api.request("GET", "/v1/events").json?[member: "events"] == .array([]))

        try FileManager.default.removeItem(atPath: fault)
        try await eventually("the store to recover", timeout: .seconds(5)) {
            (try? api.request("GET", "/readyz", key: .some(nil)).status) == 200
        }
        let retried = try api.request("DELETE", "/v1/channels/f-del")
        #expect(retried.status == 200, "\(retried.text)")
        try await eventually("the deletion's event") { !receiver.events("channel.deleted").isEmpty }
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.requests.count == 1)
        #expect(receiver.events("channel.deleted").first?[member: "data"]?.string("channelId") == "f-del")
        guard case .array(let stored)? = try api.request("GET", "/v1/events").json?[member: "events"] else { Issue.record("no events"); return }
        #expect(stored.count == 1 && stored.first?.string("type") == "channel.deleted")
    }

    @Test("an outcome whose save fails keeps its delivery in flight: not sent again while the disk is full, saved once it takes writes")
    func failedOutcomeSaveDoesNotResend() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fault = directory + "/disk-full"
        let receiver = try WebhookTestReceiver.listening(delay: .milliseconds(400))
        defer { receiver.stop() }
        let fixture = try GatewayFixture(directory: directory + "/data", webhooks: try GatewayWebhookTests.settings(url: receiver.url),
                                         storeFaultFile: fault)
        defer { Task { await fixture.shutDown(removingData: false) } }
        let api = fixture.admin
        try GatewayWebhookTests.createAndDelete("o-1", on: api)
        try await eventually("the attempt to arrive") { receiver.requests.count == 1 }
        // The disk fills while the receiver takes its time: the 2xx cannot be saved.
        #expect(FileManager.default.createFile(atPath: fault, contents: Data()))
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(receiver.requests.count == 1, "a delivery the receiver took was sent again while its outcome could not be saved")

        try FileManager.default.removeItem(atPath: fault)
        try await eventually("the outcome saved", timeout: .seconds(10)) {
            (try? api.request("GET", "/metrics").text.contains(#"touchline_webhook_pending{endpoint="receiver"} 0"#)) == true
        }
        #expect(receiver.requests.count == 1)
        #expect(try api.request("GET", "/metrics").text.contains(#"touchline_webhook_deliveries_total{endpoint="receiver"} 1"#))
    }

    @Test("a delivery pending when the process is killed (-9) is delivered after the restart, once", .enabled(if: ServeProcess.isAvailable))
    func pendingSurvivesKill() async throws {
        let data = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let failing = Failing()
        let receiver = try WebhookTestReceiver.listening { _ in failing.on.load(ordering: .relaxed) ? 503 : 200 }
        defer { receiver.stop() }
        let webhooks = """
            {"endpoints": [{"name": "r", "url": "\(receiver.url)", "secret": "\(GatewayWebhookTests.secret)", "events": ["*"]}],
             "retryInitialMilliseconds": 20, "retryMaximumMilliseconds": 100}
            """
        let first = try await ServeProcess(dataDirectory: data, arguments: ["--webhooks", webhooks])
        try GatewayWebhookTests.createAndDelete("killed", on: first.admin)
        try await eventually("failed attempts before the kill") { receiver.requests.count >= 2 }
        first.kill9()
        let before = receiver.requests
        #expect(before.allSatisfy { $0.status == 503 })

        failing.on.store(false, ordering: .relaxed)
        let second = try await ServeProcess(dataDirectory: data, arguments: ["--webhooks", webhooks])
        defer { _ = second.terminate() }
        try await eventually("the delivery after the restart") { receiver.requests.contains { $0.status == 200 } }
        try await Task.sleep(for: .milliseconds(600))
        let after = receiver.requests.dropFirst(before.count)
        #expect(after.count == 1, "\(after.map(\.status))")
        #expect(Set(receiver.requests.compactMap { $0.header("Touchline-Event-Id") }).count == 1, "the same event every time")
        #expect(receiver.events("channel.deleted").last?[member: "data"]?.string("channelId") == "killed")
    }

    /// The receiver's answer, switched from the test.
    final class Failing: Sendable {
        let on = Atomic<Bool>(true)
    }
}
