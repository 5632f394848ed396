import Testing
import TouchlineCore
import TouchlineStore

/// The registry reads behind `GET /v1/deadletters` and `POST /v1/deadletters/replay`: filtered
/// keyset pages, look-up by id, and which tokens of an explicit list can still be sent to.
@Suite struct DeadLetterReaderTests {
    static func hex(_ n: Int) -> String { String(repeating: "0", count: 60) + String(format: "%04x", n) }

    @Test func pagesFilterByStatusJobAndReasonAndIdsAreLookedUpAsAList() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        var operations: [TokenOperation] = [.createJob(personalJob("j1")), .createJob(personalJob("j2"))]
        for n in 0..<9 {
            operations.append(.deadLetter(DeadLetterRecord(jobID: n < 6 ? "j1" : "j2", token: Self.hex(n),
                                                           reason: n % 3 == 0 ? "TopicDisallowed" : "BadDeviceToken", at: t0)))
        }
        try await writer.submit(operations)
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        let all = try reader.deadLetters(after: 0, limit: 100)
        #expect(all.map(\.token) == (0..<9).map(Self.hex))

        // Job j1 and reason BadDeviceToken, two per page: letters 1, 2, 4, 5.
        var seen: [String] = []
        var after: Int64 = 0
        while case let page = try reader.deadLetters(jobID: "j1", reason: "BadDeviceToken", after: after, limit: 2), let last = page.last {
            seen += page.map(\.token)
            after = last.id
        }
        #expect(seen == [1, 2, 4, 5].map(Self.hex))
        #expect(try reader.deadLetters(jobID: "j2", after: 0, limit: 100).count == 3)
        #expect(try reader.deadLetters(reason: "TopicDisallowed", after: 0, limit: 100).map(\.token) == [0, 3, 6].map(Self.hex))

        try await writer.submit([.markReplayed(ids: [all[0].id, all[7].id])])
        #expect(try reader.deadLetters(status: .replayed, after: 0, limit: 100).map(\.id) == [all[0].id, all[7].id])
        #expect(try reader.deadLetters(status: .dead, jobID: "j2", after: 0, limit: 100).map(\.id) == [all[6].id, all[8].id])

        let byID = try reader.deadLetters(ids: [all[8].id, all[0].id, 999])
        #expect(byID.map(\.id) == [all[0].id, all[8].id], "in id order, unknown ids left out")
        #expect(byID.map(\.status) == [.replayed, .dead])
        #expect(try reader.deadLetters(ids: []).isEmpty)
    }

    @Test func activeTokensAmongAListSkipsDeactivatedAndUnknownTokens() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        try await writer.submit((0..<4).map { .registerToken(TokenRecord(token: Self.hex($0), kind: $0 == 3 ? .update : .pushToStart,
                                                                          channelID: $0 == 3 ? "m1" : nil, registeredAt: t0)) })
        try await writer.submit([.deactivateToken(Self.hex(1), unlessRegisteredAfter: t0 + .seconds(1), at: t0 + .seconds(1))])
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        let asked = [Self.hex(3), Self.hex(9), Self.hex(1), Self.hex(0).uppercased()]
        #expect(try reader.activeTokens(among: asked) == [Self.hex(0), Self.hex(3)], "any kind, token order, lowercase")
        #expect(try reader.activeTokens(among: []).isEmpty)
    }
}
