import APNsMock
import Synchronization
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// What a personal job sent before a shutdown is in its last save: a job that finishes while an
/// earlier save of it is still in the store (its last save waits for that one), and a job whose
/// last answers come in the shutdown's grace. Without it such a job stayed `running` in the store
/// and, after the restart, resumed from the save before and sent again what it had sent since.
/// The first in process on the in-memory backends, whose personal store holds its commits on
/// demand; the second against the mock, whose latency keeps the answers for the grace.
@Suite("Gateway personal job's last save at shutdown", .gatewaysInProcess)
struct GatewayPersonalShutdownSaveTests {
    @Test func aJobFinishedBehindItsEarlierSaveIsSavedDoneByTheShutdown() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        let parts = try #require(fixture.inMemory)
        let api = fixture.admin
        for n in 0..<3 {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(GatewayPersonalAPITests.token(n))", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
        // The job's first push holds the personal store's commits: the save the job makes
        // after its sends waits there while their answers come and the job finishes.
        let held = Mutex(false)
        try #require(parts.apns.personal).script { request in
            if case .push = request, !held.withLock({ $0 }) {
                held.withLock { $0 = true }
                parts.personal.holdCommits()
            }
            return nil
        }
        let created = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        #expect(created.status == 202, "\(created.text)")
        let jobID = try #require(created.json?.string("jobId"))
        try await eventually("the three pushes answered") { parts.apns.personal?.requests.count == 3 && held.withLock { $0 } }

        let shutdown = Task { await fixture.shutDown() }
        // The shutdown queues the finished job's last save behind the held one.
        let queued = await (try? eventually("the job's last save queued behind the held one", timeout: .seconds(10)) {
            parts.personal.queueDepth >= 2
        }) != nil
        parts.personal.releaseCommits()
        await shutdown.value
        #expect(queued, "the shutdown queued no last save of the finished job")

        let stored = try #require(try parts.personal.openReader().job(id: jobID))
        #expect(stored.status == .done, "the job is stored as \(stored.status)")
        #expect(stored.counts.sent == 3)
    }

    /// Answers that come in the shutdown's grace count: a job whose last answers come then is
    /// saved done with them, not left to resume after the restart and send them again.
    @Test(.heavy) func answersInTheShutdownsGraceAreSavedWithTheJob() async throws {
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(1500) }
        let parts = InMemoryParts()
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data",
                                         backends: .inMemoryStores(channels: parts.channels, personal: parts.personal))
        defer { Task { await apns.shutDown() } }
        let api = fixture.admin
        for n in 0..<3 {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(GatewayPersonalAPITests.token(n))", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
        let created = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        // The three starts are at APNs, their answers 1.5 s away, when the gateway stops.
        try await eventually("the three starts at the mock") { apns.mock.counters().count(endpoint: .device, status: 200) == 3 }
        await fixture.shutDown()

        let stored = try #require(try parts.personal.openReader().job(id: jobID))
        #expect(stored.status == .done, "the job is stored as \(stored.status)")
        #expect(stored.counts.sent == 3)
    }
}
