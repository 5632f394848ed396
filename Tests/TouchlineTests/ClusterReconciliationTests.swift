import APNsMock
import Foundation
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// Reconciliation with APNs' list-all on a cluster: the gateway holding partition 0 deletes the
/// APNs channels no gateway accounts for, once two rounds an interval apart agree, and never a
/// channel any gateway runs (docs/cluster.md, "Reconciliation with APNs' list-all"). On the
/// in-memory cluster, against the strict mock APNs.
@Suite("Cluster reconciliation with APNs", .heavy)
struct ClusterReconciliationTests {
    @Test func anOrphanAtAppleIsDeletedByOneGatewayAndEveryChannelOfTheClusterIsKept() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns) { $0.store.jetStream?.reconcileInterval = .seconds(1) }
        // Channels created while the rounds run: a create whose id is being saved is never taken for an orphan.
        let channels = (1...8).map { "match-\($0)" }
        let orphan = try #require(apns.mock.createChannel(storagePolicy: 0))
        try await ClusterGatewayTests.create(channels, through: gateways.map(\.patientAdmin))
        let apnsIDs = try ClusterGatewayTests.apnsIDs(of: channels, through: gateways[0].patientAdmin)

        try await eventually("the orphan deleted at Apple", timeout: .seconds(30)) { apns.mock.channels()[orphan] == nil }
        // Two more complete rounds: the cluster's own channels stay.
        func completeRounds() throws -> Double {
            try gateways.enumerated().map { index, gateway in
                metricValue(try gateway.patientAdmin.request("GET", "/metrics").text,
                            #"touchline_cluster_reconcile_rounds_total{instance="g\#(index + 1)",outcome="complete"}"#) ?? 0
            }.reduce(0, +)
        }
        let roundsAtDeletion = try completeRounds()
        try await eventually("two more complete rounds") { (try? completeRounds()).map { $0 >= roundsAtDeletion + 2 } ?? false }
        let atApple = apns.mock.channels()
        #expect(apnsIDs.values.allSatisfy { atApple[$0] != nil }, "every channel of the cluster is still at Apple")
        let deletions = apns.mock.recordedRequests().filter { $0.method == "DELETE" }
        #expect(deletions.count == 1, "one gateway deleted the orphan, once: \(deletions.map { "\($0.path) \($0.status)" })")

        let metrics = try gateways.map { try $0.patientAdmin.request("GET", "/metrics").text }
        let deleted = zip(["g1", "g2"], metrics).map { name, text in
            metricValue(text, #"touchline_cluster_orphans_deleted_total{instance="\#(name)"}"#) ?? -1
        }
        #expect(deleted.sorted() == [0, 1], "\(deleted)")
        let completeRounds = zip(["g1", "g2"], metrics).map { name, text in
            metricValue(text, #"touchline_cluster_reconcile_rounds_total{instance="\#(name)",outcome="complete"}"#) ?? 0
        }
        #expect(completeRounds.filter { $0 > 0 }.count == 1, "rounds run on the gateway holding partition 0 only: \(completeRounds)")
    }
}
