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
        // Longer than a forward's 10 s: a request handed to a gateway cut off is answered 503
        // `owner_timeout` by this one, never left to the client's own timeout.
        return (gateway, GatewayTestClient(.inProcess(gateway), key: GatewayFixture.adminKey).waiting(upTo: 30))
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
            // The second gateway's share moves to it as it joins: a create caught by the move
            // is finished by the next owner, and the retry finds the channel there.
            let answers = try await Self.patientAnswers(apis[index % 2], "POST", "/v1/channels", #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#)
            let created = try #require(answers.last)
            let mayHaveActed = answers.dropLast().contains { ["channel_moved", "owner_timeout"].contains($0.errorCode) }
            #expect(created.status == 201 || (created.status == 200 && mayHaveActed), "\(id): \(answers.map(\.text))")
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

    /// A create under way at APNs when its gateway is cut off from the cluster: the provider is
    /// told it may have been stored (`channel_moved`, not `channel_moving`'s "nothing was
    /// done"), the other gateway finishes it from the intent in the log, and the retry gets the
    /// channel there, which then takes events.
    @Test func aCreateCaughtByItsPartitionsMoveIsFinishedByTheNextOwner() async throws {
        let cluster = InMemoryNATSCluster(mappings: [])
        let apns = [InMemoryAPNsPair(channelPrefix: "g1-"), InMemoryAPNsPair(channelPrefix: "g2-")]
        let (g1, api1) = try Self.start("g1", on: cluster, apns: apns[0])
        let (g2, api2) = try Self.start("g2", on: cluster, apns: apns[1])
        let shares = try await Self.settledShares(of: [api1, api2])
        let partitioning = try #require(ChannelPartitioning(count: Self.partitions))
        let id = try #require((1...100).map { "final-\($0)" }.first { shares[0].contains(partitioning.partition(of: $0)) })
        let g1APNs = try #require(apns[0].broadcast)
        g1APNs.hold { if case .createChannel = $0 { true } else { false } }

        let create = #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#
        // Answered only once g1's lease has lapsed: on a thread of its own, not one of the
        // tasks' few threads.
        async let first = Self.onThread { try api1.request("POST", "/v1/channels", json: create) }
        try await eventually("the create at g1's APNs", timeout: .seconds(10)) {
            g1APNs.requests.contains { if case .createChannel = $0 { true } else { false } }
        }
        cluster.partition("g1")
        let moved = try await first
        #expect(moved.status == 503 && moved.errorCode == "channel_moved", "\(moved.text)")
        #expect(moved.text.contains("may have been stored"), "\(moved.text)")

        let retried = try await Self.patiently(api2, "POST", "/v1/channels", create)
        #expect([200, 201].contains(retried.status), "\(retried.text)")
        let apnsID = try #require(retried.json?.string("apnsChannelId"), "\(retried.text)")
        #expect(apnsID.hasPrefix("g2-"), "created again by the next owner: \(apnsID)")
        let event = try await Self.patiently(api2, "POST", "/v1/channels/\(id)/events", #"{"seq": 1, "patch": {"minute": 1}}"#)
        #expect(event.status == 202, "\(event.text)")
        try await eventually("the event at g2's APNs", timeout: .seconds(10)) {
            Self.minutes(at: apns[1]).contains { $0.channel == apnsID && $0.minute == 1 }
        }
        g1APNs.releaseHeld()
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
    /// owner unreachable), for up to 30 s: a request handed to a gateway just cut off waits the
    /// forward's 10 s before its 503, so a shorter wait would allow only one more try.
    static func patiently(_ api: GatewayTestClient, _ method: String, _ path: String, _ json: String) async throws -> GatewayTestClient.Response {
        try await patientAnswers(api, method, path, json).last!
    }

    /// Every answer ``patiently(_:_:_:_:)`` got, the last one last.
    static func patientAnswers(_ api: GatewayTestClient, _ method: String, _ path: String, _ json: String) async throws -> [GatewayTestClient.Response] {
        let deadline = ContinuousClock.now + .seconds(30)
        var answers: [GatewayTestClient.Response] = []
        while true {
            let answer = try api.request(method, path, json: json)
            answers.append(answer)
            guard answer.status == 503, ContinuousClock.now < deadline else { return answers }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `body`'s result, run on a thread of its own (a blocking request that waits for seconds).
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { done in
            Thread { done.resume(with: Result { try body() }) }.start()
        }
    }

    /// The partitions each of `apis` serves, once every partition is served by exactly one.
    static func settledShares(of apis: [GatewayTestClient]) async throws -> [Set<Int>] {
        var shares: [Set<Int>] = []
        try await eventually("every partition served by one gateway", timeout: .seconds(15)) {
            shares = try apis.map { api in
                guard case .array(let served)? = try api.request("GET", "/readyz").json?[member: "cluster"]?[member: "servedPartitions"] else { return [] }
                return Set(served.compactMap { if case .integer(let number) = $0 { Int(number) } else { nil } })
            }
            return shares.allSatisfy { !$0.isEmpty } && shares.reduce(0) { $0 + $1.count } == partitions
                && shares.reduce(into: Set<Int>()) { $0.formUnion($1) }.count == partitions
        }
        return shares
    }
}
