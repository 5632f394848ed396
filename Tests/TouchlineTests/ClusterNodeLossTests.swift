import NATS
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// NATS servers lost one at a time under load, as machines are: the leader of a busy partition
/// log killed, then the lease bucket's leader, then every node in turn, each started again
/// before the next goes. Ingest goes on through every loss (a request may get 503 during an
/// election and is sent again), nothing acknowledged is lost, and each channel's states reach
/// APNs in order.
@Suite("Cluster node loss", .gatewaysInProcess)
struct ClusterNodeLossTests {
    @Test(.heavy(weight: 3, long: true)) func nodesKilledInTurnAndStreamLeadersKilledLoseNothingAcknowledged() async throws {
        let servers = try await NATSCluster.start()
        let cluster = ClusterUnderTest.servers(servers)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try started.add(["g1", "g2"].map { try ClusterGatewayTests.gateway($0, cluster: cluster, apns: apns) })
        let channels = (1...8).map { "match-\($0)" }
        try await ClusterGatewayTests.create(channels, through: gateways.map(\.patientAdmin))
        let apnsIDs = try ClusterGatewayTests.apnsIDs(of: channels, through: gateways[0].patientAdmin)
        let load = EventLoad(channels: channels, gateways: gateways.map(\.patientAdmin))
        load.start()
        try await eventually("events acknowledged") { load.acknowledgedCount > 100 }

        let loop = EventLoop.start(name: "leader-reader")
        defer { loop.stop() }
        let observer = try cluster.connect(name: "leader-reader", loop: loop)
        defer { observer.messaging.close() }
        let partition = ChannelPartitioning(count: ClusterGatewayTests.partitions)!.partition(of: channels[0])
        func leader(of stream: String) throws -> Int {
            let name = try #require(try observer.streamState(stream)?.leader, "\(stream) has a leader")
            return try #require(servers.nodes.firstIndex { $0.name == name }, "\(name) is a node")
        }
        var killed: [String] = []
        for round in 0..<4 {
            let victim = switch round {
            case 0: try leader(of: "TOUCHLINE_LOG_\(partition)")
            case 1: try leader(of: "KV_touchline_leases")
            default: round % 3
            }
            killed.append(servers.nodes[victim].name)
            let before = load.acknowledgedCount
            await servers.kill(victim)
            try await eventually("ingest going on without \(servers.nodes[victim].name) (round \(round))", timeout: .seconds(60)) {
                load.acknowledgedCount > before + 100
            }
            try await servers.restart(victim)
            try await eventually("ingest going on after it is back (round \(round))", timeout: .seconds(60)) {
                load.acknowledgedCount > before + 200
            }
        }
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
            #expect(seen == seen.sorted(), "\(id)'s states went back in time at APNs (nodes killed: \(killed)): \(seen)")
        }
    }
}
