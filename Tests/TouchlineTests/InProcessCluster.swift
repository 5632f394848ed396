import Foundation
import Synchronization
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Gateways of one in-memory cluster in this process, each sending to an in-memory APNs of its
/// own (its channel ids start with its name) that records into one journal, their clients in
/// process: the tier of the cluster tests that read only the API and what the gateways asked of
/// APNs (no socket, no file but each gateway's personal store, no heavy slot). `shutDown()`
/// stops every gateway started, however the test ends.
final class InProcessCluster: Sendable {
    let cluster: InMemoryNATSCluster
    let journal = InMemoryAPNsJournal()
    private let started = Mutex<[(name: String, gateway: GatewayFixture, apns: InMemoryAPNsPair)]>([])

    init() { cluster = InMemoryNATSCluster() }

    /// The cluster as the tests that also run on servers take it.
    var underTest: ClusterUnderTest { .inMemory(cluster) }

    /// Starts gateways `names`, each configured by `configure`.
    func add(_ names: [String], configure: (inout GatewayConfiguration) -> Void = { _ in }) throws -> [GatewayFixture] {
        try names.map { name in
            let apns = InMemoryAPNsPair(channelPrefix: "\(name)-", journal: journal)
            let gateway = try GatewayFixture(apns: InMemoryParts.unusedAPNsSettings, backends: .inMemoryCluster(cluster, apns: apns), inProcess: true) {
                $0.store = StoreSettings(backend: .jetstream, jetStream: JetStreamSettings(
                    servers: ["nats://in-memory"], instance: InstanceID(name)!, partitions: ClusterGatewayTests.partitions,
                    snapshotLogBytes: ClusterGatewayTests.snapshotLogBytes))
                configure(&$0)
            }
            started.withLock { $0.append((name, gateway, apns)) }
            return gateway
        }
    }

    /// Gateways `names` once every one serves its share of the partitions (see
    /// ``StartedGateways/serving(_:on:apns:configure:)``).
    func serving(_ names: [String] = ["g1", "g2"], configure: (inout GatewayConfiguration) -> Void = { _ in }) async throws -> [GatewayFixture] {
        let gateways = try add(names, configure: configure)
        try await eventually("every gateway serves partitions") { ClusterPersonalJobTests.everyGatewayServes(gateways.map(\.patientAdmin)) }
        return gateways
    }

    /// The in-memory APNs of gateway `name` (its dispatches exist once it started).
    func apns(of name: String) -> InMemoryAPNsPair? { started.withLock { $0.first { $0.name == name }?.apns } }

    /// The device tokens the gateways pushed to, in order.
    var pushedTokens: [String] { journal.pushes.map(\.deviceToken) }

    func shutDown() {
        let gateways = started.withLock { $0.map(\.gateway) }
        Task { for gateway in gateways { await gateway.shutDown() } }
    }
}
