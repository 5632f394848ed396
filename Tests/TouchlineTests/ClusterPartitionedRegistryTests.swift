import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Gateways of a cluster holding the token registry partitioned (`store.registry`
/// `partitioned`, docs/cluster.md, "The partitioned token registry"): each gateway holds the
/// tokens of the partitions it owns, any gateway registers, lists and deletes any token, and a
/// job's slices run where their tokens are. In process, on the in-memory cluster.
@Suite("The partitioned token registry in the gateways", .gatewaysInProcess)
struct ClusterPartitionedRegistryTests {
    static func partitioned(_ configuration: inout GatewayConfiguration) {
        configuration.store.jetStream?.registry = .partitioned
    }

    /// The `tokens` of a user listing, as (token, active) pairs.
    static func listed(_ response: GatewayTestClient.Response) -> [String: Bool] {
        guard case .array(let items)? = response.json?[member: "tokens"] else { return [:] }
        var listed: [String: Bool] = [:]
        for item in items {
            guard case .string(let token)? = item[member: "token"], case .bool(let active)? = item[member: "active"] else { continue }
            listed[token] = active
        }
        return listed
    }

    /// The registry partitions gateway `admin` serves, as its `/readyz` shows them.
    static func servedRegistryPartitions(_ admin: GatewayTestClient) -> [Int] {
        guard case .array(let items)? = (try? admin.request("GET", "/readyz").json)?[member: "cluster"]?[member: "registry"]?[member: "servedPartitions"]
        else { return [] }
        return items.compactMap { if case .integer(let partition) = $0 { Int(partition) } else { nil } }
    }

    /// Every registry partition served once between `admins`.
    static func registryServed(by admins: [GatewayTestClient]) -> Bool {
        let served = admins.flatMap(servedRegistryPartitions)
        return served.sorted() == Array(0..<ClusterGatewayTests.partitions)
    }

    /// Gateways g1 and g2 holding the registry partitioned, once they serve every registry
    /// partition between them.
    static func twoGateways(on cluster: InProcessCluster) async throws -> [GatewayFixture] {
        let gateways = try await cluster.serving(configure: Self.partitioned)
        try await eventually("every registry partition served") { Self.registryServed(by: gateways.map(\.patientAdmin)) }
        return gateways
    }

    /// Tokens registered through one gateway, of users and partitions all over, are listed and
    /// deleted through the other; a user's new push-to-start token, registered through the
    /// other gateway, replaces the earlier one wherever each is held.
    @Test func tokensRegisteredThroughOneGatewayAreListedReplacedAndDeletedThroughTheOther() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateways = try await Self.twoGateways(on: cluster)
        let (g1, g2) = (gateways[0].patientAdmin, gateways[1].patientAdmin)
        // Thirty users' push-to-start tokens (one each: a user's new one replaces the last),
        // spread over the partitions by their random digits, as the users are by their ids.
        let tokens = ClusterPersonalJobTests.tokens(31)
        let items = (0..<30).map { #"{"token": "\#(tokens[$0])", "kind": "push-to-start", "userId": "u\#($0)"}"# }
        let batch = try g1.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(items.joined(separator: ","))]}"#)
        #expect(batch.status == 201, "\(batch.text)")
        for user in 0..<30 {
            #expect(Self.listed(try g2.request("GET", "/v1/tokens?userId=u\(user)")) == [tokens[user]: true], "u\(user)")
        }

        // A user's push-to-start token, then a new one through the other gateway: the first is replaced.
        let (first, second) = (tokens[30], ClusterPersonalJobTests.tokens(40)[39])
        #expect(try g1.request("POST", "/v1/tokens", json: #"{"token": "\#(first)", "kind": "push-to-start", "userId": "fan"}"#).status == 201)
        #expect(try g2.request("POST", "/v1/tokens", json: #"{"token": "\#(second)", "kind": "push-to-start", "userId": "fan"}"#).status == 201)
        try await eventually("the earlier push-to-start token replaced") {
            Self.listed(try g1.request("GET", "/v1/tokens?userId=fan")) == [first: false, second: true]
        }

        #expect(try g2.request("DELETE", "/v1/tokens/\(tokens[0])").status == 200)
        #expect(try g1.request("DELETE", "/v1/tokens/\(tokens[0])").errorCode == "token_not_found")
        #expect(Self.listed(try g1.request("GET", "/v1/tokens?userId=u0")).isEmpty)
    }

    /// A job for the followers of a team, accepted by one gateway, is cut on the registry's
    /// partitions: each slice runs where its tokens are held, and every fan is reached once.
    /// A job for one user's tokens reaches exactly that user's tokens of the event's kind.
    @Test func jobsRunWhereTheirTokensAreHeldAndReachEachTokenOnce() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateways = try await Self.twoGateways(on: cluster)
        let (g1, g2) = (gateways[0].patientAdmin, gateways[1].patientAdmin)
        let fans = ClusterPersonalJobTests.tokens(300)
        try ClusterPersonalJobTests.register(fans, through: g1, perRequest: 50)
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: g2)
        #expect(job.progress?.integer("targeted") == 300 && job.progress?.integer("sent") == 300, "\(String(describing: job.progress))")
        #expect(cluster.pushedTokens.count == 300 && Set(cluster.pushedTokens) == Set(fans), "each fan once: \(cluster.pushedTokens.count)")
        // One slice per partition, each started on the gateway serving its partition.
        let slicesStarted = try gateways.map { gateway in
            metricValue(try gateway.patientAdmin.request("GET", "/metrics").text, "touchline_personal_slices_started_total") ?? 0
        }
        #expect(slicesStarted.reduce(0, +) == Double(ClusterGatewayTests.partitions), "\(slicesStarted)")

        // A user with a push-to-start token among the fans: a start for the user reaches it alone.
        let user = fans[7]
        #expect(try g2.request("POST", "/v1/tokens", json: #"{"token": "\#(user)", "kind": "push-to-start", "userId": "u7", "follows": ["team:ARS"]}"#).status == 201)
        let forUser = GatewayPersonalAPITests.startBody.replacingOccurrences(of: #"{"follows": "team:ARS"}"#, with: #"{"userId": "u7"}"#)
        let userJob = try await GatewayDeadLetterTests.runJob(forUser, on: g1)
        #expect(userJob.progress?.integer("sent") == 1, "\(String(describing: userJob.progress))")
        #expect(cluster.pushedTokens.count == 301 && cluster.pushedTokens.last == user)
    }

    /// A gateway that stops gives its registry partitions up: the other takes them over from
    /// their logs, and serves every token, registered through either.
    @Test func aStoppedGatewaysRegistryPartitionsAreTakenOverWithEveryToken() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateways = try await Self.twoGateways(on: cluster)
        let (g1, g2) = (gateways[0].patientAdmin, gateways[1].patientAdmin)
        let tokens = ClusterPersonalJobTests.tokens(40)
        for (index, token) in tokens.enumerated() {
            let through = index.isMultiple(of: 2) ? g1 : g2
            #expect(try through.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", "userId": "u\#(index)"}"#).status == 201)
        }
        await gateways[1].shutDown()
        try await eventually("g1 serves every registry partition") { Self.registryServed(by: [g1]) }
        for (index, token) in tokens.enumerated() {
            #expect(Self.listed(try g1.request("GET", "/v1/tokens?userId=u\(index)")) == [token: true], "u\(index)")
        }
    }
}

/// A cluster's gateways hold the registry alike: the first records how, and a gateway set
/// otherwise is refused at start, naming both.
@Suite("The registry layout a cluster agrees on", .gatewaysInProcess)
struct ClusterRegistryLayoutAgreementTests {
    @Test func aGatewaySetToAnotherRegistryLayoutIsRefusedAtStart() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        _ = try await cluster.serving(["g1"], configure: ClusterPartitionedRegistryTests.partitioned)
        do {
            _ = try cluster.add(["g2"])
            Issue.record("a gateway holding the registry shared started on a cluster holding it partitioned")
        } catch {
            let message = String(describing: error)
            #expect(message.contains("partitioned") && message.contains("shared") && message.contains("store.registry"), "\(message)")
        }
    }
}

/// The partitioned registry on three nats-server processes: gateways over sockets, each
/// partition's log a replicated stream, the owners reached over the servers.
@Suite("The partitioned token registry on servers", .serialized, .heavy(weight: 3))
struct ClusterPartitionedRegistryServerTests {
    @Test func tokensAndJobsGoThroughEitherGatewayAndSurviveOneStopping() async throws {
        let cluster = try await ClusterUnderTest.start(.servers)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns, configure: ClusterPartitionedRegistryTests.partitioned)
        let (g1, g2) = (gateways[0].patientAdmin, gateways[1].patientAdmin)
        try await eventually("every registry partition served") { ClusterPartitionedRegistryTests.registryServed(by: [g1, g2]) }
        let fans = ClusterPersonalJobTests.tokens(200)
        for start in stride(from: 0, to: fans.count, by: 50) {
            let items = (start..<start + 50).map {
                #"{"token": "\#(fans[$0])", "kind": "push-to-start", "userId": "u\#($0)", "follows": ["team:ARS"]}"#
            }
            let batch = try g1.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(items.joined(separator: ","))]}"#)
            #expect(batch.status == 201, "\(batch.text)")
        }
        for user in stride(from: 0, to: 200, by: 13) {
            #expect(ClusterPartitionedRegistryTests.listed(try g2.request("GET", "/v1/tokens?userId=u\(user)")) == [fans[user]: true], "u\(user)")
        }
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: g2)
        #expect(job.progress?.integer("targeted") == 200 && job.progress?.integer("sent") == 200, "\(String(describing: job.progress))")

        // g1 stops: g2 takes its registry partitions over from their logs, with every token.
        await gateways[0].shutDown(removingData: false)
        try await eventually("g2 serves every registry partition", timeout: .seconds(60)) { ClusterPartitionedRegistryTests.registryServed(by: [g2]) }
        for user in stride(from: 5, to: 200, by: 11) {
            #expect(ClusterPartitionedRegistryTests.listed(try g2.request("GET", "/v1/tokens?userId=u\(user)")) == [fans[user]: true], "u\(user)")
        }
        #expect(try g2.request("DELETE", "/v1/tokens/\(fans[3])").status == 200)
        #expect(ClusterPartitionedRegistryTests.listed(try g2.request("GET", "/v1/tokens?userId=u3")).isEmpty)
    }
}
