import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// One body of behaviour on each backend the assembly can take: SQLite files, in-memory stores,
/// and a member of the in-memory JetStream cluster. The API answers the same; only what the
/// backend supplies differs (where jobs are kept, what `/readyz` shows of it).
@Suite(.gatewaysInProcess) struct GatewayBackendChoiceTests {
    enum Choice: Sendable, CustomTestStringConvertible {
        case sqlite, inMemoryStores
        /// A member of this in-memory cluster.
        case inMemoryCluster(InMemoryNATSCluster)

        static var allCases: [Choice] { [.sqlite, .inMemoryStores, .inMemoryCluster(InMemoryNATSCluster())] }
        var isCluster: Bool { if case .inMemoryCluster = self { true } else { false } }
        var testDescription: String {
            switch self {
            case .sqlite: "sqlite"
            case .inMemoryStores: "inMemoryStores"
            case .inMemoryCluster: "inMemoryCluster"
            }
        }
    }

    /// A gateway on `choice`, sending to in-memory APNs, driven in process.
    static func start(on choice: Choice, apns: InMemoryAPNsPair) throws -> (Gateway, GatewayTestClient) {
        // APNs settings are required by `.apple` mode and ignored by the in-memory dispatch.
        let settings = GatewayConfiguration.APNsSettings(keyPath: "/nonexistent/key.p8", keyID: "KEY", teamID: "TEAM",
                                                         bundleID: "com.example.touchline", environment: .sandbox)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-backend-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = GatewayConfiguration(apnsMode: .apple, apns: settings, listenHost: "127.0.0.1", listenPort: 0, dataDirectory: directory,
                                                 apiKeys: [.init(key: GatewayFixture.adminKey, scope: .admin)])
        let backends: Gateway.Backends
        switch choice {
        case .sqlite:
            backends = .sqlite(apns: apns)
        case .inMemoryStores:
            backends = .inMemory(channels: InMemoryStore(name: "channels"), personal: InMemoryStore(name: "personal"), apns: apns)
        case .inMemoryCluster(let cluster):
            configuration.store = StoreSettings(backend: .jetstream, jetStream: JetStreamSettings(servers: ["nats://in-memory"], instance: InstanceID("g1")!,
                                                                                                 partitions: 4))
            backends = .inMemoryCluster(cluster, apns: apns)
        }
        let gateway = Gateway(configuration: configuration, backends: backends)
        try gateway.start()
        return (gateway, GatewayTestClient(.inProcess(gateway), key: GatewayFixture.adminKey))
    }

    @Test(arguments: Choice.allCases)
    func theSameAPIOnEveryBackend(_ choice: Choice) async throws {
        let apns = InMemoryAPNsPair()
        let (gateway, api) = try Self.start(on: choice, apns: apns)
        // A cluster member takes its partitions up as their leases come: 503 meanwhile.
        let created = try await InMemoryClusterGatewayTests.patiently(api, "POST", "/v1/channels", #"{"id": "club-1", "storagePolicy": "no-storage"}"#)
        #expect(created.status == 201, "\(created.text)")
        let stored = try api.request("POST", "/v1/channels/club-1/events", json: #"{"seq": 1, "patch": {"minute": 1}}"#)
        #expect(stored.status == 202, "\(stored.text)")
        let refused = try api.request("POST", "/v1/channels/club-1/events", json: #"{"seq": 2, "patch": 5}"#)
        #expect(refused.status == 422 && refused.errorCode == "invalid_event", "\(refused.text)")
        try await eventually("minute 1 at APNs", timeout: .seconds(10)) {
            InMemoryClusterGatewayTests.minutes(at: apns).contains { $0.minute == 1 }
        }

        let job = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        #expect(job.status == 202, "\(job.text)")
        let jobID = try #require(job.json?.string("jobId"))
        let shown = try api.request("GET", "/v1/personal/\(jobID)")
        #expect(shown.status == 200 && shown.json?.string("jobId") == jobID, "\(shown.text)")
        let unknown = try api.request("GET", "/v1/personal/job-none")
        #expect(unknown.status == 404, "\(unknown.text)")

        // What the backend supplies shows where operators look: a cluster member's part.
        let ready = try api.request("GET", "/readyz")
        #expect(ready.status == 200, "\(ready.text)")
        #expect((ready.json?[member: "cluster"] != nil) == choice.isCluster, "\(ready.text)")
        let metrics = try api.request("GET", "/metrics")
        #expect(metrics.text.contains("touchline_cluster_connected") == choice.isCluster)
        await gateway.shutdown()
    }
}
