import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// One acknowledged write per channel in the store at a time: requests that come meanwhile wait
/// and go together in the next commit, up to a bound beyond which they are refused. In process
/// on the in-memory backends, whose store holds its commits on demand.
@Suite("Gateway channel writes", .gatewaysInProcess)
struct GatewayChannelWritesTests {
    /// Requests a channel holds while its write is in the store (docs/api.md, Limits).
    static let waitingLimit = 64

    @Test func requestsWaitBehindTheChannelsWriteUpToTheBound() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        let store = try #require(fixture.inMemory).channels
        defer { Task { await fixture.shutDown() } }
        // The held requests wait for as long as this test takes to release them on a busy machine.
        let api = fixture.admin.waiting(upTo: 60)
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "q1", "storagePolicy": "no-storage"}"#).status == 201)
        // The store holds its commits (as behind another connection's write lock): the
        // channel's first write waits there, for as long as the test takes.
        store.holdCommits()
        let total = 70
        // Blocking clients on threads of their own (the task pool has only as many as CPUs).
        let answers = Mutex<[Int: GatewayTestClient.Response]>([:])
        let done = DispatchGroup()
        for seq in 1...total {
            done.enter()
            Thread {
                if let response = try? api.request("POST", "/v1/channels/q1/events", json: #"{"seq": \#(seq), "patch": {"n": \#(seq)}}"#) {
                    answers.withLock { $0[seq] = response }
                }
                done.leave()
            }.start()
        }
        // Every request has arrived once all but the first 1 + 64 have been refused.
        try await eventually("the requests beyond the bound to be refused", timeout: .seconds(30)) {
            answers.withLock { $0.count } == total - 1 - Self.waitingLimit
        }
        store.releaseCommits()
        // Awaited, not waited for: a blocked thread of the task pool holds up other tests (each
        // request is bounded by its client's 10 s timeout).
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in done.notify(queue: .global()) { finished.resume() } }
        let byStatus = Dictionary(grouping: answers.withLock { Array($0.values) }, by: \.status)
        let busy = byStatus[503] ?? []
        #expect(busy.count == total - 1 - Self.waitingLimit, "\(byStatus.mapValues(\.count))")
        #expect(busy.allSatisfy { $0.errorCode == "channel_busy" && $0.header("Retry-After") == "1" })
        #expect((byStatus[202] ?? []).count == 1 + Self.waitingLimit)
        let shown = try api.request("GET", "/v1/channels/q1").json
        let lastSeq = try #require(shown?.integer("lastSeq"))
        #expect(shown?[member: "contentState"] == ["n": .integer(lastSeq)], "the state is the last applied event's")
    }
}
