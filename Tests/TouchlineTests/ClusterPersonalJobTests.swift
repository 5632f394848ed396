import APNsMock
import Foundation
import NATS
import NATSServers
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime

/// Personal jobs on a cluster: a job accepted by one gateway runs on all of them, a slice at a
/// time where its partition is owned, and a gateway killed in the middle of it loses nothing
/// (docs/cluster.md, "Personal jobs on the cluster").
@Suite("Personal jobs on a cluster", .heavy(weight: 3))
struct ClusterPersonalJobTests {
    /// `count` distinct push-to-start tokens spread over every first hex digit, in a stable order.
    static func tokens(_ count: Int) -> [String] {
        var random = SplitMix64(seed: 2_026)
        return (0..<count).map { _ in (0..<4).map { _ in String(random.next(), radix: 16).padded(to: 16) }.joined() }
    }

    /// Registers `tokens` as followers of team:ARS through `api`, `perRequest` at a time.
    static func register(_ tokens: [String], through api: GatewayTestClient, perRequest: Int = 1_000) throws {
        for start in stride(from: 0, to: tokens.count, by: perRequest) {
            let items = tokens[start..<min(start + perRequest, tokens.count)].map {
                #"{"token": "\#($0)", "kind": "push-to-start", "follows": ["team:ARS"]}"#
            }
            let registered = try api.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(items.joined(separator: ","))]}"#)
            guard registered.status == 201 else { throw Failure("registering tokens: \(registered.status) \(registered.text)") }
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The slices' last saved progress in the cluster's job bucket, read by a client of the test.
    static func savedSlices(in cluster: NATSCluster) async throws -> [SharedJobPlan.SliceKey: SliceEntry] {
        let loop = EventLoop.start(name: "bucket-reader")
        defer { loop.stop() }
        let connection = try cluster.connect(name: "bucket-reader", loop: loop)
        defer { connection.close() }
        let jetStream = try JetStream(connection)
        let read = Mutex<(entries: [SharedJobPlan.SliceKey: SliceEntry], done: Bool)>(([:], false))
        let subscription = try jetStream.subscribeOrdered(to: "$KV.touchline_jobs.slice.>", from: .lastPerSubject, loop: loop) { message in
            let parts = message.subject.split(separator: ".").suffix(3)
            guard parts.count == 3, let index = Int(parts[parts.startIndex + 1]), let count = Int(parts[parts.startIndex + 2]),
                  let slice = AudienceSlice(index: index, count: count),
                  let entry = try? JSONDecoder().decode(SliceEntry.self, from: Data(message.payload)) else { return }
            read.withLock {
                $0.entries[SharedJobPlan.SliceKey(jobID: String(parts[parts.startIndex]), slice: slice)] = entry
                if message.stream?.pending == 0 { $0.done = true }
            }
        }
        defer { subscription.cancel() }
        try await eventually("the job bucket's slices read") { read.withLock { $0.done } }
        return read.withLock { $0.entries }
    }

    /// Two gateways in this process: a job accepted by one reaches every follower once, its
    /// slices run on both, and either gateway shows its final counts.
    @Test func aJobAcceptedByOneGatewayRunsOnEveryGatewayAndReachesEachFanOnce() async throws {
        let cluster = try await NATSCluster.start()
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try started.add(["g1", "g2"].map { try ClusterGatewayTests.gateway($0, cluster: cluster, apns: apns) })
        try await eventually("both gateways serve partitions") {
            zip(gateways, ["g1", "g2"]).allSatisfy { gateway, name in
                let metrics = try? gateway.patientAdmin.request("GET", "/metrics").text
                return (metrics.flatMap { metricValue($0, #"touchline_cluster_partitions_served{instance="\#(name)"}"#) } ?? 0) > 0
            }
        }
        let fans = Self.tokens(400)
        try Self.register(fans, through: gateways[0].patientAdmin, perRequest: 50)
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: gateways[0].patientAdmin)
        #expect(job.progress?.integer("targeted") == 400 && job.progress?.integer("sent") == 400 && job.progress?.integer("pending") == 0,
                "\(String(describing: job.progress))")
        let otherView = try gateways[1].patientAdmin.request("GET", "/v1/personal/\(job.id)").json
        #expect(otherView?.string("status") == "done" && otherView?.integer("sent") == 400)

        let starts = apns.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }.compactMap(\.deviceToken)
        #expect(starts.count == 400 && Set(starts) == Set(fans), "each fan once: \(starts.count) starts")
        let slices = try await Self.savedSlices(in: cluster).filter { $0.key.jobID == job.id }
        #expect(slices.count == 16 && slices.values.allSatisfy(\.isFinished))
        #expect(Set(slices.values.map(\.instance)) == ["g1", "g2"], "the slices ran on both gateways")
        #expect(slices.values.map(\.checkpoint.counters.sent).reduce(0, +) == 400)
    }
}

extension String {
    fileprivate func padded(to length: Int) -> String { String(repeating: "0", count: max(0, length - count)) + self }
}
