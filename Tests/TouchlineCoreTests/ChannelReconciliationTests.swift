import Testing
import TouchlineCore

/// Lost creates matched against Apple's list at start: adopt by storage policy (oldest first),
/// create again what no orphan fits, delete what nobody adopts.
@Suite("Channel reconciliation")
struct ChannelReconciliationTests {
    typealias Reconciliation = ChannelReconciliation

    static func pending(_ id: String, _ storage: ChannelStorage, at seconds: Int64) -> Reconciliation.Pending {
        .init(id: id, storage: storage, createdAt: UnixTime(seconds: seconds))
    }

    @Test func orphansAreTheListedIdsNoRecordHolds() {
        #expect(Reconciliation.orphans(listed: ["a", "b", "c"], accounted: ["b"]) == ["a", "c"])
    }

    @Test func theOldestPendingChannelWithTheSamePolicyAdoptsEachOrphan() {
        let plan = Reconciliation.plan(
            pending: [Self.pending("new", .mostRecent, at: 20), Self.pending("old", .mostRecent, at: 10), Self.pending("plain", .noStorage, at: 5)],
            orphans: [.init(apnsID: "x", storage: .mostRecent), .init(apnsID: "y", storage: .noStorage)])
        #expect(plan == Reconciliation.Plan(adoptions: [("old", "x"), ("plain", "y")], recreate: ["new"], delete: []))
    }

    @Test func orphansNobodyFitsOrWhosePolicyIsUnknownAreDeleted() {
        let plan = Reconciliation.plan(pending: [Self.pending("m", .noStorage, at: 1)],
                                       orphans: [.init(apnsID: "x", storage: .mostRecent), .init(apnsID: "y", storage: nil),
                                                 .init(apnsID: "z", storage: .noStorage), .init(apnsID: "w", storage: .noStorage)])
        #expect(plan == Reconciliation.Plan(adoptions: [("m", "z")], recreate: [], delete: ["x", "y", "w"]))
    }

    @Test func withoutOrphansEveryPendingChannelIsCreatedAgainOldestFirst() {
        let plan = Reconciliation.plan(pending: [Self.pending("b", .mostRecent, at: 2), Self.pending("a", .mostRecent, at: 2),
                                                 Self.pending("c", .noStorage, at: 1)], orphans: [])
        #expect(plan.recreate == ["c", "a", "b"] && plan.adoptions.isEmpty && plan.delete.isEmpty)
    }
}
