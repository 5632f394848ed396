import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

@Suite struct ChannelStoreTests {
    @Test func createIsIdempotentAndReturnsTheExistingRecord() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let first = try await writer.createChannel(channel("match-1", status: .creating))
        #expect(first.inserted)
        #expect(first.record == channel("match-1", status: .creating))

        var other = channel("match-1", status: .active, apnsID: "other")
        other.policyJSON = "{}"
        let second = try await writer.createChannel(other)
        #expect(!second.inserted)
        #expect(second.record == channel("match-1", status: .creating))
    }

    @Test func updatesStatusAndDeleteAreReadBack() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let reader = try SQLiteChannelReader(path: dir.file("store.db"))
        _ = try await writer.createChannel(channel("match-1"))
        try await writer.submit(WriteBatch([
            .updateState(ChannelStateUpdate(channelID: "match-1", updatedAt: t0 + .seconds(5),
                                            contentState: Array(#"{"home":1}"#.utf8), lastSeq: 7)),
            .updateState(ChannelStateUpdate(channelID: "match-1", updatedAt: t0 + .seconds(6), lastSentState: Array(#"{"home":1}"#.utf8),
                                            lastSentTimestamp: 1_767_225_606, engineSnapshot: [0, 1, 2], countersJSON: #"{"pushes":1}"#)),
        ]))
        var stored = try #require(try reader.channel(id: "match-1"))
        #expect(stored.contentState == Array(#"{"home":1}"#.utf8))
        #expect(stored.lastSeq == 7)
        #expect(stored.lastSentState == Array(#"{"home":1}"#.utf8))
        #expect(stored.lastSentTimestamp == 1_767_225_606)
        #expect(stored.engineSnapshot == [0, 1, 2])
        #expect(stored.countersJSON == #"{"pushes":1}"#)
        #expect(stored.updatedAt == t0 + .seconds(6))
        #expect(stored.policyJSON == #"{"minInterval":2}"#)

        let end = ChannelEnd(dismissAt: t0 + .seconds(900), endedAt: t0 + .seconds(10))
        try await writer.submit(WriteBatch([.markStatus(channelID: "match-1", status: .ending, end: end, at: t0 + .seconds(10))]))
        stored = try #require(try reader.channel(id: "match-1"))
        #expect(stored.status == .ending)
        #expect(stored.end == end)

        try await writer.submit(WriteBatch([.deleteChannel(channelID: "match-1")]))
        #expect(try reader.channel(id: "match-1") == nil)
    }

    @Test func updatingAnUnknownChannelFailsNamingIt() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let result = writer.submitAndWait(WriteBatch([.markStatus(channelID: "nope", status: .ended, end: nil, at: t0)]))
        #expect(throws: StoreError.unknownChannel("nope")) { try result.get() }
    }

    @Test func listIsPaginatedByID() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let reader = try SQLiteChannelReader(path: dir.file("store.db"))
        try await writer.submit(WriteBatch((0..<25).map { .createChannel(channel(String(format: "m-%02d", $0))) }))
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        while true {
            let page = try reader.channels(after: cursor, limit: 10)
            if page.isEmpty { break }
            pages += 1
            seen += page.map(\.id)
            cursor = page.last?.id
        }
        #expect(pages == 3)
        #expect(seen == (0..<25).map { String(format: "m-%02d", $0) })
    }

    @Test func creationIntentsAreListedUntilAPNsAnswered() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let reader = try SQLiteChannelReader(path: dir.file("store.db"))
        _ = try await writer.createChannel(channel("a", status: .creating))
        _ = try await writer.createChannel(channel("b", status: .creating))
        _ = try await writer.createChannel(channel("c", status: .active, apnsID: "apns-c"))
        #expect(try reader.channels(status: .creating).map(\.id) == ["a", "b"])

        try await writer.submit(WriteBatch([.channelCreated(channelID: "a", apnsChannelID: "apns-a", at: t0 + .seconds(1))]))
        #expect(try reader.channels(status: .creating).map(\.id) == ["b"])
        let a = try #require(try reader.channel(id: "a"))
        #expect(a.status == .active)
        #expect(a.apnsChannelID == "apns-a")
        #expect(try reader.channel(apnsChannelID: "apns-a")?.id == "a")
        #expect(try reader.channel(apnsChannelID: "apns-unknown") == nil)
    }

    @Test func eventLogAppendsReadsTruncatesAndRefusesDuplicates() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let reader = try SQLiteChannelReader(path: dir.file("store.db"))
        _ = try await writer.createChannel(channel("m"))
        try await writer.submit(WriteBatch([.appendEvents((1...5).map { event("m", $0) })]))
        #expect(try reader.events(channelID: "m", afterSeq: 2, limit: 10) == (3...5).map { event("m", $0) })

        let duplicate = writer.submitAndWait(WriteBatch([.appendEvents([event("m", 6), event("m", 5)])]))
        guard case .failure(.database(let error)) = duplicate else {
            Issue.record("expected a constraint failure, got \(duplicate)")
            return
        }
        #expect(error.isConstraintViolation)
        #expect(error.statement?.contains("INSERT INTO events") == true)
        #expect(try reader.events(channelID: "m", afterSeq: 0, limit: 10).map(\.seq) == [1, 2, 3, 4, 5])

        try await writer.submit(WriteBatch([.truncateEvents(channelID: "m", throughSeq: 3)]))
        #expect(try reader.events(channelID: "m", afterSeq: 0, limit: 10).map(\.seq) == [4, 5])

        let orphan = writer.submitAndWait(WriteBatch([.appendEvents([event("no-such-channel", 1)])]))
        #expect(throws: StoreError.self) { try orphan.get() }

        try await writer.submit(WriteBatch([.deleteChannel(channelID: "m")]))
        #expect(try reader.events(channelID: "m", afterSeq: 0, limit: 10).isEmpty)
    }

    @Test func submitsAfterCloseFailAsClosed() throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        writer.close()
        #expect(throws: StoreError.closed) { try writer.submitAndWait(WriteBatch([.createChannel(channel("x"))])).get() }
    }

    @Test func openingAnUnwritablePathNamesIt() {
        #expect {
            _ = try StoreWriter(path: "/nonexistent-dir/store.db")
        } throws: { error in
            "\(error)".contains("/nonexistent-dir/store.db")
        }
    }
}
