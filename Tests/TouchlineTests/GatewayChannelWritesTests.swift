import Foundation
import Synchronization
import Testing
import Touchline
import TouchlineCore
import TouchlineRuntime

/// One acknowledged write per channel in the store at a time: requests that come meanwhile wait
/// and go together in the next commit, up to a bound beyond which they are refused.
@Suite("Gateway channel writes")
struct GatewayChannelWritesTests {
    /// Requests a channel holds while its write is in the store (docs/api.md, Limits).
    static let waitingLimit = 64

    @Test func requestsWaitBehindTheChannelsWriteUpToTheBound() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "q1", "storagePolicy": "no-storage"}"#).status == 201)
        // Another connection holds SQLite's write lock: the channel's first write waits in the store.
        let holder = try SQLiteConnection(path: fixture.directory + "/touchline.sqlite")
        try holder.execute("BEGIN IMMEDIATE")
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
        try await Task.sleep(for: .milliseconds(3_000))
        try holder.execute("COMMIT")
        holder.close()
        #expect(done.wait(timeout: .now() + 20) == .success)
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
