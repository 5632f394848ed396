import Testing
@testable import Touchline
@testable import TouchlineCluster
import TouchlineCore
import TouchlineStore

/// The cursor of `GET /v1/events` on a cluster, and the merge of the outboxes' pages into one.
struct ClusterCursorTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)

    static func event(_ id: Int64, at second: Int64) -> StoredWebhookEvent {
        StoredWebhookEvent(id: id, eventID: "e\(id)", type: "channel.ended", createdAt: t0 + .seconds(second), body: Array("{\"n\":\(id)}".utf8))
    }

    @Test func aCursorReadsBackAsWrittenAndLeavesOutSourcesAtTheirStart() throws {
        let cursor = ClusterCursor(positions: ["p3": 8_388_609, "p12": 1, "mg-1": 36, "p0": 0])
        #expect(cursor.text == "c~mg-1.10~p12.1~p3.4zsox")
        #expect(ClusterCursor(cursor.text) == ClusterCursor(positions: ["p3": 8_388_609, "p12": 1, "mg-1": 36]))
        #expect(ClusterCursor("c") == .start && ClusterCursor.start.text == "c")
    }

    @Test(arguments: ["", "0-0", "c~", "c~p3", "c~p3.0", "c~p3.-1", "c~p3.zz~p3.1", "c~q3.1", "c~px.1", "c~p12345.1", "c~m.1", "c~mbad!name.1",
                      "cc~p3.1", "c~p3.1.2", "c~p3.!"])
    func anythingElseIsNotACursor(text: String) {
        #expect(ClusterCursor(text) == nil)
    }

    @Test func aCursorIsBounded() {
        let many = "c" + (0..<(ClusterCursor.maximumSources + 1)).map { "~p\($0 % 1024).1" }.joined()
        #expect(ClusterCursor(many) == nil)
    }

    /// The source whose next event was created first goes next; each source is taken as a
    /// prefix, so the next cursor skips nothing a later page would need.
    @Test func pagesMergeByCreationTimeAndTheCursorMovesPastAPrefixOfEachSource() {
        let pages: [String: [StoredWebhookEvent]] = [
            "p0": [Self.event(10, at: 1), Self.event(11, at: 4), Self.event(12, at: 6)],
            "p1": [Self.event(20, at: 2), Self.event(21, at: 3)],
            "mg1": [Self.event(30, at: 5)],
        ]
        let start = ClusterCursor(positions: ["p0": 9, "p7": 70])
        let (first, next) = start.merging(pages, limit: 4)
        #expect(first.map(\.id) == [10, 20, 21, 11])
        #expect(next.positions == ["p0": 11, "p1": 21, "p7": 70])
        // What each source holds after the next cursor's positions.
        let rest = ["p0": [Self.event(12, at: 6)], "p1": [], "mg1": [Self.event(30, at: 5)]]
        let (second, last) = next.merging(rest, limit: 4)
        #expect(second.map(\.id) == [30, 12])
        #expect(last.positions == ["p0": 12, "p1": 21, "p7": 70, "mg1": 30])
        #expect(last.merging([:], limit: 4).events.isEmpty && last.merging([:], limit: 4).next == last)
    }
}
