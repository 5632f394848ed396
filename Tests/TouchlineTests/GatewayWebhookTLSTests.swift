import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// `https://` receivers: verified against `caFile`, never delivered to unverified.
@Suite("Gateway webhooks over TLS", .heavy)
struct GatewayWebhookTLSTests {
    static func settings(url: String, caFile: String) throws -> WebhookSettings {
        var settings = try GatewayWebhookTests.settings(url: url)
        settings.caFile = caFile
        return settings
    }

    @Test("a receiver whose certificate the CA signed gets the event")
    func verifiedDelivery() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificates = try MockAPNsDevelopmentCertificates.generate(in: directory + "/tls")
        let receiver = try WebhookTLSTestReceiver(certificateFile: certificates.certificateFile, privateKeyFile: certificates.privateKeyFile)
        defer { receiver.stop() }
        let fixture = try GatewayFixture(directory: directory + "/data", webhooks: try Self.settings(url: receiver.url(), caFile: certificates.caFile))
        defer { Task { await fixture.shutDown(removingData: false) } }
        try GatewayWebhookTests.createAndDelete("tls-1", on: fixture.admin)
        try await eventually("the delivery over TLS") { !receiver.requests.isEmpty }
        let request = try #require(receiver.requests.first)
        #expect(request.head.hasPrefix("POST /tls-hooks HTTP/1.1"))
        #expect(request.header("Host") == "localhost:\(receiver.port)")
        let event = try #require(try? JSONParser.parse(request.body))
        #expect(event.string("type") == "channel.deleted" && event[member: "data"]?.string("channelId") == "tls-1")
        try await eventually("the delivery recorded") {
            (try? fixture.admin.request("GET", "/metrics").text.contains(#"touchline_webhook_deliveries_total{endpoint="receiver"} 1"#)) == true
        }
    }

    @Test("a receiver whose certificate another CA signed is refused: retried, never delivered")
    func unverifiedCertificateIsRefused() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trusted = try MockAPNsDevelopmentCertificates.generate(in: directory + "/trusted")
        let stranger = try MockAPNsDevelopmentCertificates.generate(in: directory + "/stranger")
        let receiver = try WebhookTLSTestReceiver(certificateFile: stranger.certificateFile, privateKeyFile: stranger.privateKeyFile)
        defer { receiver.stop() }
        let fixture = try GatewayFixture(directory: directory + "/data", webhooks: try Self.settings(url: receiver.url(), caFile: trusted.caFile))
        defer { Task { await fixture.shutDown(removingData: false) } }
        try GatewayWebhookTests.createAndDelete("tls-2", on: fixture.admin)
        try await eventually("several refused attempts") {
            let metrics = (try? fixture.admin.request("GET", "/metrics").text) ?? ""
            return (metricValue(metrics, #"touchline_webhook_failed_attempts_total{endpoint="receiver"}"#) ?? 0) >= 2
        }
        let metrics = try fixture.admin.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_webhook_deliveries_total{endpoint="receiver"} 0"#))
        #expect(metrics.contains(#"touchline_webhook_pending{endpoint="receiver"} 1"#))
        #expect(receiver.requests.isEmpty, "no byte of the event reached a receiver the gateway could not verify")
        #expect(receiver.completedHandshakes == 0)
    }
}
