import APNsMock
import ChildProcesses
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

/// A job of 40,000 tokens through the death of one of three gateways. What the killed gateway
/// had saved and sent is read so that no timing decides it: its saves from a watch of the job
/// bucket opened before the job (its last save of each slice), what it sent from the mock's
/// connections it used; so it runs beside other tests, on the three slots of its NATS servers.
/// (It used to take every slot: it read the bucket after the kill, and a test beside it holding
/// the CPU made that read late, after the survivors had taken the slices over.) Long (15 s
/// alone, 30 s in the full run): it runs as the run begins, rather than ending it. 40,000 tokens
/// are enough for the kill to land mid-slice on every run (about 5 of 16 slices move).
@Suite("A cluster job through a gateway's death", .heavy(weight: 3, long: true))
struct ClusterJobKillTests {
    static let killAudience = 40_000

    /// Three `touchline serve` processes on one cluster fan a job of 40,000 tokens out; one of
    /// them is killed with SIGKILL a third of the way through. The others take its partitions
    /// over and resume its slices from their saved checkpoints: the job ends with sent +
    /// dead-lettered + expired = targeted = 40,000, every token is accepted, and a token goes
    /// twice only if it was sent by the killed gateway after its slice's last save.
    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aGatewayKilledInTheMiddleOfAJobLosesNoTargetAndResendsOnlyWhatItHadNotSaved() async throws {
        let cluster = try await NATSCluster.start()
        let apns = try MockAPNsFixture { $0.recordingCapacity = 2 * Self.killAudience + 10_000 }
        defer { Task { await apns.shutDown(); withExtendedLifetime(cluster) {} } }
        func serve(_ name: String) async throws -> ServeProcess {
            let store = #"{"backend": "jetstream", "servers": [\#(cluster.urls.map { "\"\($0)\"" }.joined(separator: ","))], "instance": "\#(name)", "partitions": 8}"#
            return try await ServeProcess(dataDirectory: apns.directory + "/\(name)",
                                          arguments: apns.serveArguments + ["--store", store, "--log-level", "notice", "--max-body-bytes", "4194304",
                                                                            "--personal-queue", #"{"saveIntervalMilliseconds": 20}"#])
        }
        let gateways = [try await serve("g1"), try await serve("g2"), try await serve("g3")]
        let admins = gateways.map { $0.admin.waiting(upTo: 60) }
        // Balanced first, so that only the kill moves slices while the job runs.
        try await eventually("every gateway serves its share of the 8 partitions", timeout: .seconds(60)) {
            ClusterPersonalJobTests.everyGatewayServes(admins, partitions: 8)
        }
        let fans = ClusterPersonalJobTests.tokens(Self.killAudience)
        try ClusterPersonalJobTests.register(fans, through: admins[0], perRequest: 5_000)
        let saves = try SliceSaves(in: .servers(cluster))

        // The kill comes from a thread of its own watching the mock (see GatewayPersonalResumeTests).
        let mock = apns.mock, victim = gateways[1], victimPID = victim.process.pid
        let killed = DispatchSemaphore(value: 0)
        let killedAt = Mutex<UnixTime?>(nil)
        Thread {
            let deadline = ContinuousClock.now + .seconds(120)
            while mock.counters().count(endpoint: .device, status: 200) < Self.killAudience / 3, ContinuousClock.now < deadline {
                usleep(1_000)
            }
            kill(victimPID, SIGKILL)
            killedAt.withLock { $0 = UnixTime(nanoseconds: Int64(Date().timeIntervalSince1970 * 1e9)) }
            killed.signal()
        }.start()
        let created = try admins[0].request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { killed.wait(); done.resume() }
        }
        victim.process.wait()
        let killTime = try #require(killedAt.withLock { $0 })
        // The slices the killed gateway was running, with what it had saved of each: its last
        // saves (the survivors save them only after taking them over).
        let victimSlices = saves.lastSaves(by: "g2", ofJob: jobID).filter { !$0.value.isFinished }
        #expect(!victimSlices.isEmpty, "the killed gateway was running slices: \(saves.savers(ofJob: jobID))")
        func accepted() -> [MockAPNsRecordedRequest] { apns.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 } }
        #expect(accepted().count { $0.receivedAt <= killTime } < Self.killAudience, "the kill came in the middle of the fan-out")
        // Midway, the job shows how many of its slices have ended.
        let midway = try admins[0].request("GET", "/v1/personal/\(jobID)").json?[member: "slices"]
        #expect(midway?[member: "total"] == .integer(16) && (midway?.integer("finished") ?? 16) < 16, "\(String(describing: midway))")

        var progress: JSONValue?
        do {
            try await eventually("the job to finish on the survivors", timeout: .seconds(180)) {
                progress = try? admins[2].request("GET", "/v1/personal/\(jobID)").json
                return progress?.string("status") == "done"
            }
        } catch {
            let slices = try await ClusterPersonalJobTests.savedSlices(in: .servers(cluster)).filter { $0.key.jobID == jobID }
            Issue.record("""
                \(String(describing: progress)); slices: \(slices.sorted { $0.key < $1.key }.map { "\($0.key.slice.index):\($0.value.instance):\($0.value.isFinished):\($0.value.checkpoint.counters.sent)" })
                g1: \(gateways[0].logLines.suffix(30).joined(separator: "\n"))
                g3: \(gateways[2].logLines.suffix(30).joined(separator: "\n"))
                """)
            throw error
        }
        let targeted = progress?.integer("targeted") ?? -1, sent = progress?.integer("sent") ?? -1
        let expired = progress?.integer("expired") ?? -1
        var failed: Int64 = 0
        if case .object(let reasons)? = progress?[member: "failed"] {
            for reason in reasons { if case .integer(let count) = reason.value { failed += count } }
        }
        #expect(targeted == Int64(Self.killAudience) && sent + failed + expired == targeted && progress?.integer("pending") == 0,
                "\(String(describing: progress))")

        let acceptedAtEnd = accepted()
        var seen: [String: Int] = [:]
        for token in acceptedAtEnd.compactMap(\.deviceToken) { seen[token, default: 0] += 1 }
        #expect(seen.count == Self.killAudience && Set(seen.keys) == Set(fans), "\(seen.count) distinct tokens accepted")
        let twice = seen.filter { $0.value > 1 }
        #expect(twice.values.allSatisfy { $0 == 2 })
        // Only tokens of the killed gateway's slices, and no more of them than it had sent
        // beyond its last saves.
        let victimKeys = Set(victimSlices.keys.map(\.slice))
        func ofVictimSlice(_ request: MockAPNsRecordedRequest) -> Bool { victimKeys.contains { $0.contains(request.deviceToken ?? "") } }
        #expect(twice.keys.allSatisfy { token in victimKeys.contains { $0.contains(token) } }, "a token of another gateway's slice went twice")
        // What the killed gateway sent: every token of its slices on its connections to the mock,
        // those that carried one before the kill (no other gateway sent them then), its last
        // requests included, which the mock may have read after the kill.
        let victimConnections = Set(acceptedAtEnd.filter { $0.receivedAt <= killTime && ofVictimSlice($0) }.map(\.connection))
        let sentByVictimBeforeKill = acceptedAtEnd.count { victimConnections.contains($0.connection) && ofVictimSlice($0) }
        let savedByVictim = victimSlices.values.map(\.checkpoint.counters.sent).reduce(0, +)
        #expect(twice.count <= sentByVictimBeforeKill - savedByVictim,
                "\(twice.count) tokens went twice; the killed gateway had \(sentByVictimBeforeKill) accepted in its slices and \(savedByVictim) saved")
        print("cluster job kill: \(acceptedAtEnd.count { $0.receivedAt <= killTime }) of \(Self.killAudience) accepted at the kill, \(victimSlices.count) slices moved, \(twice.count) tokens sent twice (\(sentByVictimBeforeKill - savedByVictim) unsaved at the kill)")
        for survivor in [gateways[0], gateways[2]] { #expect(survivor.terminate() == 0) }
    }
}
