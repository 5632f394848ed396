import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Two of the three NATS servers stopped under load (the cluster has no quorum), then started
/// again: meanwhile ingest answers 503 with `Retry-After` and `/readyz` says why; nothing
/// acknowledged is lost, every channel's states reach APNs in order, and everything resumes
/// by itself once the servers are back.
@Suite("Cluster quorum loss", .gatewaysInProcess)
struct ClusterQuorumLossTests {
    @Test(.heavy(weight: 3, long: true)) func withoutQuorumIngestAnswers503AndEverythingResumesWhenTheServersReturn() async throws {
        let run = try await LoadedCluster.start()
        defer { run.shutDown() }
        let (servers, gateways, load) = (run.servers, run.gateways, run.load)

        await servers.kill(1)
        await servers.kill(2)
        let beforeOutage = load.refusals.values.reduce(0, +)
        try await eventually("ingest refused while the cluster has no quorum", timeout: .seconds(60)) {
            load.refusals.values.reduce(0, +) > beforeOutage + 20
        }
        // Stalled: nothing more is acknowledged while two servers of three are gone.
        let stalledAt = load.acknowledgedCount
        for (index, gateway) in gateways.enumerated() {
            var answer: GatewayTestClient.Response?
            do {
                try await eventually("g\(index + 1) not ready, naming why", timeout: .seconds(60)) {
                    answer = try gateway.patientAdmin.request("GET", "/readyz")
                    return answer?.status == 503 && answer?.text.contains(#""leaseWritesFailing":"for "#) == true
                }
            } catch {
                throw GatewayTestClient.Failure(description: "\(error); /readyz answered \(answer?.status ?? 0) \(answer?.text ?? "")")
            }
        }
        try await eventually("ingest refused naming the cluster", timeout: .seconds(30)) {
            load.refusals.keys.contains("503 cluster_unavailable Retry-After")
        }
        try await Task.sleep(for: .seconds(2))
        #expect(load.acknowledgedCount <= stalledAt + 16, "at most a round of requests in flight when the quorum went")

        try await servers.restart(1)
        try await servers.restart(2)
        try await eventually("ingest resumed by itself", timeout: .seconds(90)) { load.acknowledgedCount > stalledAt + 200 }
        try await eventually("both gateways ready again", timeout: .seconds(60)) {
            try gateways.allSatisfy { try $0.patientAdmin.request("GET", "/readyz").status == 200 }
        }
        try await run.expectEveryAcknowledgedStateInOrder("quorum lost and back")
        // Stalled writes show until the next one is stored (a renewal, a heartbeat), once the lease
        // bucket's stream has recovered too: as long as the other recoveries above are given.
        var answers: [String] = []
        do {
            try await eventually("both gateways' lease writes stored again", timeout: .seconds(60)) {
                answers = try gateways.map { try $0.patientAdmin.request("GET", "/readyz").text }
                return answers.allSatisfy { $0.contains(#""leaseWritesFailing":null"#) }
            }
        } catch {
            throw GatewayTestClient.Failure(description: "\(error); /readyz answered \(answers.joined(separator: " and "))")
        }
    }
}
