import Synchronization
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// A personal job that finishes while an earlier save of it is still in the store waits for that
/// save before writing its last one; a shutdown meanwhile writes that last save itself. Without
/// it the job stayed `running` in the store and, after the restart, resumed from the save before
/// and sent again what it had sent since. In process on the in-memory backends, whose personal
/// store holds its commits on demand.
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
}
