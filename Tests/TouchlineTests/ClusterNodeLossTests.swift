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
        let run = try await LoadedCluster.start()
        defer { run.shutDown() }
        let (servers, load) = (run.servers, run.load)

        let loop = EventLoop.start(name: "leader-reader")
        defer { loop.stop() }
        let observer = try run.cluster.connect(name: "leader-reader", loop: loop)
        defer { observer.messaging.close() }
        let partition = ChannelPartitioning(count: ClusterGatewayTests.partitions)!.partition(of: run.channels[0])
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
        try await run.expectEveryAcknowledgedStateInOrder("nodes killed: \(killed)")
    }
}
