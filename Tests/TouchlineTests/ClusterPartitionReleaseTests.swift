import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// A gateway holds in memory the channels of the partitions it serves, not of every partition it
/// ever served: those it gives up are dropped, and read again from the log when it takes them
/// back (docs/cluster.md, "Giving a partition up").
@Suite("Partitions given up", .gatewaysInProcess)
struct ClusterPartitionReleaseTests {
    static let partitioning = ChannelPartitioning(count: ClusterGatewayTests.partitions)!

    static func held(by gateway: GatewayFixture, named name: String) throws -> (held: Int, served: [Int]) {
        let metrics = try gateway.patientAdmin.request("GET", "/metrics").text
        let held = Int(metricValue(metrics, #"touchline_cluster_channels_held{instance="\#(name)"}"#) ?? -1)
        let ready = try gateway.patientAdmin.request("GET", "/readyz")
        guard case .array(let partitions)? = ready.json?[member: "cluster"]?[member: "servedPartitions"] else { return (held, []) }
        return (held, partitions.compactMap { if case .integer(let number) = $0 { Int(number) } else { nil } })
    }

    @Test func aGatewayDropsThePartitionsItGivesUpAndReadsThemAgainWhenItTakesThemBack() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let first = try #require(try await cluster.serving(["g1"]).first)
        let channels = (1...24).map { "match-\($0)" }
        try await ClusterGatewayTests.create(channels, through: [first.patientAdmin])
        for id in channels {
            let answer = try first.patientAdmin.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": 1, "patch": {"minute": 7}}"#)
            #expect(answer.status == 202, "\(id): \(answer.text)")
        }
        #expect(try Self.held(by: first, named: "g1").held == channels.count)

        // A second gateway takes its share: the first holds only the channels it still serves.
        let second = try #require(try cluster.add(["g2"]).first)
        var shares: [(held: Int, served: [Int])] = []
        try await eventually("each gateway holds the channels of the partitions it serves, and nothing more") {
            shares = try [Self.held(by: first, named: "g1"), Self.held(by: second, named: "g2")]
            // Every partition served again: while one is handed over, neither gateway holds it.
            guard shares.allSatisfy({ !$0.served.isEmpty }),
                  Set(shares.flatMap(\.served)).count == ClusterGatewayTests.partitions else { return false }
            return shares.allSatisfy { share in share.held == channels.count { share.served.contains(Self.partitioning.partition(of: $0)) } }
        }
        #expect(shares[0].held < channels.count && shares[0].held + shares[1].held == channels.count, "\(shares)")

        // The second leaves: the first takes its partitions back from the log, state included.
        await second.shutDown()
        try await eventually("the first holds every channel again") {
            let share = try Self.held(by: first, named: "g1")
            return share.served.count == ClusterGatewayTests.partitions && share.held == channels.count
        }
        for id in channels {
            let channel = try first.patientAdmin.request("GET", "/v1/channels/\(id)")
            #expect(channel.status == 200 && channel.text.contains(#""minute":7"#), "\(id): \(channel.text)")
            let next = try first.patientAdmin.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": 2, "patch": {"minute": 8}}"#)
            #expect(next.status == 202, "\(id): \(next.text)")
        }
    }
}
