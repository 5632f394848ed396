import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// Two gateways of the `jetstream` backend in this process, on an in-memory NATS cluster
/// (`Gateway.Backends.inMemoryCluster`) instead of servers, each with its in-memory APNs and its
/// client in process: any takes any request, each channel runs at the owner of its partition (events published straight
/// to the cluster included), and when one is cut off from the cluster the other takes its
/// channels over.
@Suite(.gatewaysInProcess) struct InMemoryClusterGatewayTests {
    static let partitions = 8

    /// A cluster gateway named `name` on `cluster`, sending to `apns`.
    static func start(_ name: String, on cluster: InMemoryNATSCluster, apns: InMemoryAPNsPair) throws -> (Gateway, GatewayTestClient) {
        // APNs settings are required by `.apple` mode and ignored by the in-memory dispatch.
        let settings = GatewayConfiguration.APNsSettings(keyPath: "/nonexistent/key.p8", keyID: "KEY", teamID: "TEAM",
                                                         bundleID: "com.example.touchline", environment: .sandbox)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = GatewayConfiguration(apnsMode: .apple, apns: settings, listenHost: "127.0.0.1", listenPort: 0, dataDirectory: directory,
                                                 apiKeys: [.init(key: GatewayFixture.adminKey, scope: .admin)])
        configuration.store = StoreSettings(backend: .jetstream, jetStream: JetStreamSettings(servers: ["nats://in-memory"], instance: InstanceID(name)!,
                                                                                             partitions: Self.partitions))
        let gateway = Gateway(configuration: configuration, backends: .inMemoryCluster(cluster, apns: apns))
        try gateway.start()
        return (gateway, GatewayTestClient(.inProcess(gateway), key: GatewayFixture.adminKey))
    }

    @Test func twoGatewaysInOneProcessShareTheChannelsAndOneTakesOverWhenTheOtherIsCutOff() async throws {
        let ingest = try #require(SubjectMapping(source: "touchline.in.*", destination: "touchline.ingest.{{partition(\(Self.partitions),1)}}.{{wildcard(1)}}"))
        let cluster = InMemoryNATSCluster(mappings: [ingest])
        let apns = [InMemoryAPNsPair(channelPrefix: "g1-"), InMemoryAPNsPair(channelPrefix: "g2-")]
        let (g1, api1) = try Self.start("g1", on: cluster, apns: apns[0])
        let (g2, api2) = try Self.start("g2", on: cluster, apns: apns[1])
        let apis = [api1, api2]
        let channels = (1...6).map { "match-\($0)" }
        var apnsIDs: [String: String] = [:]
        for (index, id) in channels.enumerated() {
            let created = try await Self.patiently(apis[index % 2], "POST", "/v1/channels", #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#)
            #expect(created.status == 201, "\(id): \(created.text)")
            apnsIDs[id] = created.json?.string("apnsChannelId")
        }
        // Every event through the other gateway than the one before: the owner orders them.
        for minute in 1...10 {
            for (index, id) in channels.enumerated() {
                let answer = try await Self.patiently(apis[(minute + index) % 2], "POST", "/v1/channels/\(id)/events",
                                                      #"{"seq": \#(minute), "patch": {"minute": \#(minute)}}"#)
                #expect(answer.status == 202, "\(id) minute \(minute): \(answer.text)")
            }
        }
        try await eventually("every channel's minute 10 at its owner's APNs", timeout: .seconds(10)) {
            Set(apns.flatMap { Self.minutes(at: $0) }.filter { $0.minute == 10 }.map(\.channel)) == Set(apnsIDs.values)
        }
        for pair in apns {
            for (channel, minutes) in Dictionary(grouping: Self.minutes(at: pair), by: \.channel) {
                #expect(minutes.map(\.minute) == minutes.map(\.minute).sorted(), "\(channel) in order at APNs")
            }
        }

        // Published straight to the cluster, as a provider's own NATS client does: the servers'
        // mapping puts each on its partition, whose owner takes it.
        let provider = InMemoryJetStream(cluster.connect(name: "provider"))
        let providerLoop = EventLoop.start(name: "provider")
        defer { providerLoop.stop() }
        for id in channels {
            let stored = await withCheckedContinuation { done in
                provider.publish(Array(#"{"seq": 11, "patch": {"minute": 11}}"#.utf8), to: "touchline.in.\(id)", loop: providerLoop) { done.resume(returning: $0) }
            }
            #expect((try? stored.get()) != nil, "\(id): \(stored)")
        }
        try await eventually("every channel's minute 11, published to the cluster, at its owner's APNs", timeout: .seconds(10)) {
            Set(apns.flatMap { Self.minutes(at: $0) }.filter { $0.minute == 11 }.map(\.channel)) == Set(apnsIDs.values)
        }

        // g1 cut off: its leases lapse, g2 takes every partition and the channels g1 ran.
        cluster.partition("g1")
        for id in channels {
            let answer = try await Self.patiently(api2, "POST", "/v1/channels/\(id)/events", #"{"seq": 12, "patch": {"minute": 12}}"#)
            #expect(answer.status == 202, "\(id) minute 12 after g1 was cut off: \(answer.text)")
        }
        try await eventually("every channel's minute 12 at g2's APNs", timeout: .seconds(10)) {
            Set(Self.minutes(at: apns[1]).filter { $0.minute == 12 }.map(\.channel)) == Set(apnsIDs.values)
        }
        #expect(!Self.minutes(at: apns[0]).contains { $0.minute == 12 }, "the cut-off gateway pushed after losing its partitions")
        await g1.shutdown()
        await g2.shutdown()
    }

    /// The minute of each broadcast `apns` took, with its channel.
    static func minutes(at apns: InMemoryAPNsPair) -> [(channel: String, minute: Int)] {
        (apns.broadcast?.requests ?? []).compactMap { request in
            guard case .broadcast(let broadcast) = request else { return nil }
            let body = String(decoding: broadcast.payload, as: UTF8.self)
            guard let range = body.range(of: #""minute":"#), let minute = Int(body[range.upperBound...].prefix { $0.isNumber }) else { return nil }
            return (broadcast.channelID, minute)
        }
    }

    /// Sends the request again while it is answered 503 (a partition not taken up yet, or its
    /// owner unreachable), for up to 15 s.
    static func patiently(_ api: GatewayTestClient, _ method: String, _ path: String, _ json: String) async throws -> GatewayTestClient.Response {
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            let answer = try api.request(method, path, json: json)
            guard answer.status == 503, ContinuousClock.now < deadline else { return answer }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
