import Foundation
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Webhooks on a cluster: each partition's events are recorded in its log with the fact they
/// report, delivered by the partition's owner, and their outcomes logged there too, so the
/// gateway that takes a partition over delivers what its previous owner had not. On the
/// in-memory cluster, but for the hand-over after a stop, on a real 3-node cluster.
@Suite("Webhooks on a cluster")
struct ClusterWebhookTests {
    static func gateway(_ name: String, cluster: ClusterUnderTest, apns: MockAPNsFixture, receiver: WebhookTestReceiver) throws -> GatewayFixture {
        let settings = try GatewayWebhookTests.settings(url: receiver.url)
        return try ClusterGatewayTests.gateway(name, cluster: cluster, apns: apns) { $0.webhooks = settings }
    }

    /// A cluster of `backend`'s kind, the mock APNs, a receiver (listening or not yet) and
    /// gateways `names` posting to it; `stop()` shuts them down in order.
    final class Setup: Sendable {
        let cluster: ClusterUnderTest
        let apns: MockAPNsFixture
        let receiver: WebhookTestReceiver
        let started = StartedGateways()

        init(listening: Bool, on backend: NATSBackend = .inMemory) async throws {
            cluster = try await ClusterUnderTest.start(backend)
            apns = try MockAPNsFixture()
            receiver = listening ? try WebhookTestReceiver.listening() : try WebhookTestReceiver()
        }

        func add(_ names: [String]) throws -> [GatewayFixture] {
            try started.add(names.map { try ClusterWebhookTests.gateway($0, cluster: cluster, apns: apns, receiver: receiver) })
        }

        func stop() {
            receiver.stop()
            started.shutDown(after: apns, keeping: cluster)
        }
    }

    /// The `channel.deleted` events the receiver took (2xx), by channel.
    static func deletedChannels(_ receiver: WebhookTestReceiver) -> [String] {
        receiver.requests.filter { (200..<300).contains($0.status) }.compactMap { request in
            guard let event = try? JSONParser.parse(request.body), event.string("type") == "channel.deleted" else { return nil }
            return event[member: "data"]?.string("channelId")
        }
    }

    static func delivered(by gateway: GatewayFixture) throws -> Double {
        metricValue(try gateway.patientAdmin.request("GET", "/metrics").text, #"touchline_webhook_deliveries_total{endpoint="receiver"}"#) ?? 0
    }

    @Test(.heavy) func eachPartitionsOwnerDeliversItsEventsOnce() async throws {
        let setup = try await Setup(listening: true)
        defer { setup.stop() }
        let (receiver, gateways) = (setup.receiver, try setup.add(["g1", "g2"]))
        let channels = (1...8).map { "hooked-\($0)" }
        try await ClusterGatewayTests.create(channels, through: gateways.map(\.patientAdmin))
        for (index, id) in channels.enumerated() {
            let deleted = try gateways[(index + 1) % 2].patientAdmin.request("DELETE", "/v1/channels/\(id)")
            #expect(deleted.status == 200, "\(id): \(deleted.text)")
        }
        try await eventually("every channel's deletion delivered") { Set(Self.deletedChannels(receiver)) == Set(channels) }
        // Time for a second delivery of any of them to show up.
        try await Task.sleep(for: .milliseconds(800))
        let delivered = Self.deletedChannels(receiver)
        #expect(delivered.count == channels.count, "each once: \(delivered.sorted())")
        let ids = receiver.requests.compactMap { $0.header("Touchline-Event-Id") }
        #expect(Set(ids).count == ids.count)
        // Both gateways delivered: each the events of the partitions it serves.
        let counts = try gateways.map(Self.delivered(by:))
        #expect(counts.allSatisfy { $0 > 0 } && counts.reduce(0, +) >= Double(channels.count), "\(counts)")
    }

    /// A gateway stops while its events are still pending (the receiver is down): the gateway
    /// taking its partitions over reads their outbox from the log and delivers them.
    @Test(.heavy(weight: 3)) func aPartitionsPendingEventsAreDeliveredByItsNextOwner() async throws {
        let setup = try await Setup(listening: false, on: .servers)
        defer { setup.stop() }
        let (receiver, gateways) = (setup.receiver, try setup.add(["g1", "g2"]))
        let channels = (1...8).map { "handed-\($0)" }
        try await ClusterGatewayTests.create(channels, through: gateways.map(\.patientAdmin))
        for id in channels {
            let deleted = try gateways[0].patientAdmin.request("DELETE", "/v1/channels/\(id)")
            #expect(deleted.status == 200, "\(id): \(deleted.text)")
        }
        // Both have tried theirs (the receiver refuses connections), so g2's are pending in its partitions' logs.
        try await eventually("g2's deliveries pending") {
            (try? metricValue(gateways[1].patientAdmin.request("GET", "/metrics").text,
                              #"touchline_webhook_failed_attempts_total{endpoint="receiver"}"#)) ?? 0 > 0
        }
        await gateways[1].shutDown(removingData: false)
        receiver.listen()
        try await eventually("every deletion delivered after the hand-over", timeout: .seconds(60)) {
            Set(Self.deletedChannels(receiver)) == Set(channels)
        }
        #expect(try Self.delivered(by: gateways[0]) >= Double(channels.count), "g1 delivered g2's partitions' events too")
    }

    /// A gateway that gave partitions up to a newcomer still holds their pending events (until
    /// its prune drops them) but no longer delivers them: the newcomer does, so each goes once.
    @Test(.heavy) func aGatewayDeliversOnlyThePartitionsItServesNow() async throws {
        let setup = try await Setup(listening: false)
        defer { setup.stop() }
        let (receiver, first) = (setup.receiver, try setup.add(["g1"])[0])
        let channels = (1...8).map { "shared-\($0)" }
        try await ClusterGatewayTests.create(channels, through: [first.patientAdmin])
        for id in channels {
            let deleted = try first.patientAdmin.request("DELETE", "/v1/channels/\(id)")
            #expect(deleted.status == 200, "\(id): \(deleted.text)")
        }
        try await eventually("g1's deliveries pending") {
            (try? metricValue(first.patientAdmin.request("GET", "/metrics").text,
                              #"touchline_webhook_failed_attempts_total{endpoint="receiver"}"#)) ?? 0 >= Double(channels.count)
        }
        let second = try setup.add(["g2"])[0]
        try await eventually("g2 to serve partitions", timeout: .seconds(60)) {
            (try? second.patientAdmin.request("GET", "/readyz").json?[member: "cluster"]?[member: "servedPartitions"])
                .map { if case .array(let served) = $0 { !served.isEmpty } else { false } } ?? false
        }
        receiver.listen()
        try await eventually("every deletion delivered", timeout: .seconds(60)) { Set(Self.deletedChannels(receiver)) == Set(channels) }
        try await Task.sleep(for: .seconds(1))
        let delivered = Self.deletedChannels(receiver)
        #expect(delivered.count == channels.count, "each once: \(delivered.sorted())")
        #expect(try Self.delivered(by: second) > 0, "the newcomer delivered its partitions' events")
    }

    /// Every event of the cluster, page by page, through either gateway: the partitions' (each
    /// read by its owner) and each gateway's personal file's (a job's end is recorded by the
    /// gateway that finished it), each once, and an empty page after the last keeps the cursor.
    @Test(.heavy) func eitherGatewayPagesThroughEveryOutboxOfTheCluster() async throws {
        let setup = try await Setup(listening: true)
        defer { setup.stop() }
        let (receiver, gateways) = (setup.receiver, try setup.add(["g1", "g2"]))
        let channels = (1...7).map { "paged-\($0)" }
        try await ClusterGatewayTests.create(channels, through: gateways.map(\.patientAdmin))
        for id in channels { #expect(try gateways[1].patientAdmin.request("DELETE", "/v1/channels/\(id)").status == 200) }
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(0), follows: "team:ARS", user: "fan-0", on: gateways[0].patientAdmin)
        _ = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: gateways[0].patientAdmin)
        try await eventually("every event delivered") { receiver.requests.filter { (200..<300).contains($0.status) }.count >= channels.count + 1 }
        let delivered = Set(receiver.requests.compactMap { $0.header("Touchline-Event-Id") })
        for gateway in gateways {
            var cursor: String? = nil
            var listed: [JSONValue] = []
            for _ in 0..<10 {
                let answer = try gateway.patientAdmin.request("GET", "/v1/events?limit=3" + (cursor.map { "&after=\($0)" } ?? ""))
                #expect(answer.status == 200, "\(answer.text)")
                guard case .array(let events)? = answer.json?[member: "events"], let next = answer.json?.string("next") else { break }
                listed += events
                if events.isEmpty {
                    #expect(next == cursor, "an empty page keeps the cursor")
                    break
                }
                #expect(events.count <= 3)
                cursor = next
            }
            let ids = listed.compactMap { $0.string("id") }
            #expect(Set(ids) == delivered && ids.count == delivered.count, "each event once: \(ids)")
            #expect(Set(listed.compactMap { $0.string("type") }) == ["channel.deleted", "personal.job.finished"])
        }
        let refused = try gateways[0].patientAdmin.request("GET", "/v1/events?after=0-0")
        #expect(refused.status == 400 && refused.errorCode == "invalid_cursor", "\(refused.text)")
    }
}
