import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// The partition count is set in two places, the servers' subject mapping and the gateways'
/// `store.partitions`: a gateway refuses at start a mapping over another count, naming both,
/// starts on a matching one, and on servers without the mapping (HTTP ingest only). Likewise a
/// replica count other than the streams'.
@Suite("Cluster mapping check", .gatewaysInProcess)
struct ClusterMappingCheckTests {
    static func mapping(over count: Int) -> SubjectMapping {
        SubjectMapping(source: "touchline.in.*", destination: "touchline.ingest.{{partition(\(count),1)}}.{{wildcard(1)}}")!
    }

    static func start(on cluster: InMemoryNATSCluster) throws -> GatewayFixture {
        let apns = InMemoryAPNsPair(channelPrefix: "g1-", journal: InMemoryAPNsJournal())
        return try GatewayFixture(apns: InMemoryParts.unusedAPNsSettings, backends: .inMemoryCluster(cluster, apns: apns), inProcess: true) {
            $0.store = StoreSettings(backend: .jetstream, jetStream: JetStreamSettings(
                servers: ["nats://in-memory"], instance: InstanceID("g1")!, partitions: ClusterGatewayTests.partitions))
        }
    }

    @Test func aMappingOverAnotherCountIsRefusedNamingBoth() throws {
        let refused = #expect(throws: (any Error).self) { _ = try Self.start(on: InMemoryNATSCluster(mappings: [Self.mapping(over: 16)])) }
        #expect("\(refused.map { "\($0)" } ?? "")".contains("spreads touchline.in.* over 16 partitions, but store.partitions is 8"),
                "\(String(describing: refused))")
    }

    @Test func aMatchingMappingAndNoMappingBothStart() async throws {
        for cluster in [InMemoryNATSCluster(mappings: [Self.mapping(over: ClusterGatewayTests.partitions)]), InMemoryNATSCluster()] {
            let gateway = try Self.start(on: cluster)
            #expect(try gateway.patientAdmin.request("GET", "/readyz").status == 200)
            await gateway.shutDown()
        }
    }

    /// On real servers the probes land in the ingest stream too; the owners take them as probes,
    /// not events (the direct-publish test checks that none is recorded as refused).
    @Test(.heavy(weight: 3)) func realServersMappingAnotherCountAreRefused() async throws {
        let servers = try await NATSCluster.start(mappings: ["touchline.in.*": "touchline.ingest.{{partition(32,1)}}.{{wildcard(1)}}"])
        let apns = try MockAPNsFixture()
        defer { Task { await apns.shutDown(); withExtendedLifetime(servers) {} } }
        let refused = #expect(throws: (any Error).self) {
            _ = try ClusterGatewayTests.gateway("g1", cluster: .servers(servers), apns: apns)
        }
        #expect("\(refused.map { "\($0)" } ?? "")".contains("spreads touchline.in.* over 32 partitions, but store.partitions is 8"),
                "\(String(describing: refused))")
    }

    /// The replica count is the streams': a gateway set to another is refused, naming both.
    @Test func aGatewaySetToAnotherReplicaCountIsRefusedNamingBoth() async throws {
        let cluster = InMemoryNATSCluster()
        let first = try Self.start(on: cluster)
        let apns = InMemoryAPNsPair(channelPrefix: "g2-", journal: InMemoryAPNsJournal())
        let refused = #expect(throws: (any Error).self) {
            _ = try GatewayFixture(apns: InMemoryParts.unusedAPNsSettings, backends: .inMemoryCluster(cluster, apns: apns), inProcess: true) {
                $0.store = StoreSettings(backend: .jetstream, jetStream: JetStreamSettings(
                    servers: ["nats://in-memory"], instance: InstanceID("g2")!, replicas: 1, partitions: ClusterGatewayTests.partitions))
            }
        }
        #expect("\(refused.map { "\($0)" } ?? "")".contains("made with 3 replicas (TOUCHLINE_LOG_0), but store.replicas is 1"),
                "\(String(describing: refused))")
        await first.shutDown()
    }

    /// A cluster whose streams were just made may not hear a publish yet (no responders): the
    /// first gateway's record of the partition count is sent again, and the gateway starts.
    @Test func aFirstPublishNoServerHearsYetIsSentAgainAtStart() async throws {
        let cluster = InMemoryNATSCluster()
        cluster.failPublishes(.refused(.noResponders(operation: "publish to touchline.cluster")), times: 2)
        let gateway = try Self.start(on: cluster)
        #expect(try gateway.patientAdmin.request("GET", "/readyz").status == 200)
        await gateway.shutDown()
    }
}
