import APNsMock
import Dispatch
import Foundation
import NATS
import NATSServers
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineCluster
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime

/// `touchline migrate --shared-registry`: a cluster's shared registry moved into its partitions
/// keeps every token as it was, refuses while a gateway runs or a job is open (changing
/// nothing), and leaves gateways that serve the tokens from their partitions alone.
@Suite("touchline migrate --shared-registry", .heavy(weight: 3))
struct RegistryLayoutMigrationTests {
    @Test func aSharedRegistrysTokensLandInThePartitionsAndTheGatewaysServeThemFromThere() async throws {
        let apns = try MockAPNsFixture()
        let cluster = try await ClusterUnderTest.start(.servers)
        let fans = ClusterPersonalJobTests.tokens(12)
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let shared = try await started.serving(on: cluster, apns: apns)
        for (n, token) in fans.prefix(11).enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: shared[n % 2].patientAdmin)
        }
        // fan-0 registers a newer token: the first is deactivated, and must arrive so.
        try GatewayDeadLetterTests.register(fans[11], follows: "team:ARS", user: "fan-0", on: shared[1].patientAdmin)
        // A finished job stays in the job bucket: it does not hold the migration back.
        let finished = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: shared[0].patientAdmin)
        #expect(finished.progress?.integer("sent") == 11, "\(String(describing: finished.progress))")

        var settings = JetStreamSettings(servers: cluster.urls, instance: InstanceID("migration")!, partitions: ClusterGatewayTests.partitions)
        settings.registry = .partitioned
        let scratch = apns.directory + "/migration"
        let whileRunning = #expect(throws: (any Error).self) { try RegistryLayoutMigration(settings: settings, dataDirectory: scratch).run() }
        #expect(String(describing: whileRunning).contains("a gateway runs on this cluster"), "\(String(describing: whileRunning))")
        for gateway in shared { await gateway.shutDown(removingData: false) }

        // A job the gateways left open (a scheduled kickoff not started yet) holds it back until it is closed.
        let loop = EventLoop.start(name: "migration-test")
        defer { loop.stopAndWait() }
        let jetStream = try cluster.connect(name: "migration-test", loop: loop)
        defer { jetStream.messaging.close() }
        let board = try SharedJobBoard.open(jetStream: jetStream, prefix: settings.prefix, replicas: settings.replicas, loop: loop)
        var open = SharedJobEntry(id: "job-open", createdAtNanoseconds: 1, audience: #"{"follows":"team:ARS"}"#, payload: Data("{}".utf8),
                                  priority: 10, expirationNanoseconds: nil, slices: 4, registrySequence: 0)
        open.startAtNanoseconds = Int64.max
        _ = try await withCheckedThrowingContinuation { done in board.publish(open) { done.resume(with: $0) } }
        let withOpenJob = #expect(throws: (any Error).self) { try RegistryLayoutMigration(settings: settings, dataDirectory: scratch).run() }
        #expect(String(describing: withOpenJob).contains("1 open personal job (job-open)"), "\(String(describing: withOpenJob))")
        #expect(throws: (any Error).self, "the refusals changed nothing: the cluster still holds it shared") {
            try ClusterDescriptor.agree(registry: "partitioned", prefix: settings.prefix, replicas: settings.replicas, jetStream: jetStream, loop: loop)
        }
        open.withdrawn = true
        try await withCheckedThrowingContinuation { done in board.replace(open) { done.resume(with: $0) } }
        // An entry that cannot be read is taken for an open job, not skipped.
        let garbled = JetStream.keySubject(bucket: board.bucket, key: "job.job-garbled")
        _ = try await withCheckedThrowingContinuation { done in jetStream.publish(Array("{".utf8), to: garbled, loop: loop) { done.resume(with: $0) } }
        let withUnreadableJob = #expect(throws: (any Error).self) { try RegistryLayoutMigration(settings: settings, dataDirectory: scratch).run() }
        #expect(String(describing: withUnreadableJob).contains("1 open personal job (job-garbled (unreadable))"), "\(String(describing: withUnreadableJob))")
        _ = try await withCheckedThrowingContinuation { done in
            jetStream.publish([], to: garbled, headers: ["KV-Operation": "DEL"], loop: loop) { done.resume(with: $0) }
        }

        // A gateway starting while the tokens are copied (its lease bucket written) stops the
        // migration before the layout changes.
        var interrupted = RegistryLayoutMigration(settings: settings, dataDirectory: scratch)
        interrupted.beforeRecordingLayout = {
            let leases = JetStream.keySubject(bucket: PartitionLeaseKeeper.bucketName(prefix: settings.prefix), key: "probe.migration")
            let written = DispatchSemaphore(value: 0)
            jetStream.publish(Array("late".utf8), to: leases, loop: loop) { _ in written.signal() }
            written.wait()
        }
        let whileStarting = #expect(throws: (any Error).self) { try interrupted.run() }
        #expect(String(describing: whileStarting).contains("the cluster moved during the migration (a gateway started)"), "\(String(describing: whileStarting))")
        #expect(throws: ClusterDescriptor.RegistryMismatch.self, "the layout is still shared") {
            try ClusterDescriptor.agree(registry: "partitioned", prefix: settings.prefix, replicas: settings.replicas, jetStream: jetStream, loop: loop)
        }

        let summary = try RegistryLayoutMigration(settings: settings, dataDirectory: scratch).run()
        #expect(summary.outcome == .migrated && summary.tokens == 12 && summary.activeTokens == 11 && summary.purged > 0, "\(summary)")
        #expect(!FileManager.default.fileExists(atPath: scratch + "/registry-migration"), "its scratch files are gone")
        let layout = RegistryLogLayout(prefix: settings.prefix)
        #expect(try jetStream.streamState(layout.streamName)?.messages == 0, "the shared log is purged")
        let again = try RegistryLayoutMigration(settings: settings, dataDirectory: scratch).run()
        #expect(again.outcome == .alreadyPartitioned && again.purged == 0, "\(again)")
        let otherLayout = #expect(throws: ClusterDescriptor.RegistryMismatch.self) {
            try ClusterDescriptor.agree(registry: "shared", prefix: settings.prefix, replicas: settings.replicas, jetStream: jetStream, loop: loop)
        }
        #expect(otherLayout?.recorded == "partitioned")

        // The same gateways, now set to the partitioned registry, on the same data directories.
        let gateways = try await started.serving(on: cluster, apns: apns, configure: ClusterPartitionedRegistryTests.partitioned)
        let (g1, g2) = (gateways[0].patientAdmin, gateways[1].patientAdmin)
        try await eventually("every registry partition served") { ClusterPartitionedRegistryTests.registryServed(by: [g1, g2]) }
        for gateway in gateways {
            #expect(try Self.tokenRows(in: gateway.directory + "/personal.sqlite") == 0, "\(gateway.directory): the whole copy was removed")
        }
        #expect(ClusterPartitionedRegistryTests.listed(try g2.request("GET", "/v1/tokens?userId=fan-0")) == [fans[0]: false, fans[11]: true])
        for n in 1..<11 {
            #expect(ClusterPartitionedRegistryTests.listed(try g1.request("GET", "/v1/tokens?userId=fan-\(n)")) == [fans[n]: true], "fan-\(n)")
        }
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: g2)
        #expect(job.progress?.integer("targeted") == 11 && job.progress?.integer("sent") == 11, "the active fans only: \(String(describing: job.progress))")
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func bothMigrationsAtOnceAreRefused() async throws {
        let both = try await ServeProcess.runToEnd(["migrate", "--from", "/nonexistent", "--shared-registry", "--dev"])
        #expect(both.status == 64 && both.output.contains("--from and --shared-registry are two migrations"), "\(both)")
    }

    private static func tokenRows(in path: String) throws -> Int64 {
        let file = try SQLiteConnection(path: path)
        defer { file.close() }
        return try file.query("SELECT count(*) FROM tokens") { $0.int64(at: 0) }.first ?? -1
    }
}
