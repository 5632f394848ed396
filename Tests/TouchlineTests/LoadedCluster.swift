import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineTesting

/// The start the chaos tests on servers share: a fresh 3-node cluster, two gateways in this
/// process sending to one strict mock APNs, eight channels created, and events posted through
/// both gateways until a hundred are acknowledged; and the check they end with.
struct LoadedCluster {
    let servers: NATSCluster
    let cluster: ClusterUnderTest
    let apns: MockAPNsFixture
    let started: StartedGateways
    let gateways: [GatewayFixture]
    let channels: [String]
    let apnsIDs: [String: String]
    let load: EventLoad

    static func start() async throws -> LoadedCluster {
        let servers = try await NATSCluster.start()
        let cluster = ClusterUnderTest.servers(servers)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        do {
            let gateways = try started.add(["g1", "g2"].map { try ClusterGatewayTests.gateway($0, cluster: cluster, apns: apns) })
            let channels = (1...8).map { "match-\($0)" }
            try await ClusterGatewayTests.create(channels, through: gateways.map(\.patientAdmin))
            let apnsIDs = try ClusterGatewayTests.apnsIDs(of: channels, through: gateways[0].patientAdmin)
            let load = EventLoad(channels: channels, gateways: gateways.map(\.patientAdmin))
            load.start()
            try await eventually("events acknowledged") { load.acknowledgedCount > 100 }
            return LoadedCluster(servers: servers, cluster: cluster, apns: apns, started: started, gateways: gateways, channels: channels,
                                 apnsIDs: apnsIDs, load: load)
        } catch {
            started.shutDown(after: apns, keeping: cluster)
            throw error
        }
    }

    func shutDown() { started.shutDown(after: apns, keeping: cluster) }

    /// Stops the load, then: every refusal was a 503 with `Retry-After`, every channel's last
    /// acknowledged state (or a later one, whose answer was lost) reached APNs, and no
    /// channel's states went back in time there.
    func expectEveryAcknowledgedStateInOrder(_ what: String) async throws {
        await load.stop()
        #expect(load.refusals.keys.allSatisfy { $0.hasPrefix("503 ") && $0.hasSuffix(" Retry-After") }, "\(load.refusals)")
        let acknowledged = load.lastAcknowledged
        try await eventually("every channel's last acknowledged minute at APNs") {
            let minutes = ClusterGatewayTests.minutes(apns.mock.recordedRequests(), apnsIDs: apnsIDs)
            return channels.allSatisfy { (minutes[$0]?.last ?? 0) >= (acknowledged[$0] ?? 0) }
        }
        let minutes = ClusterGatewayTests.minutes(apns.mock.recordedRequests(), apnsIDs: apnsIDs)
        for id in channels {
            let seen = minutes[id] ?? []
            #expect(seen == seen.sorted(), "\(id)'s states went back in time at APNs (\(what)): \(seen)")
        }
    }
}
