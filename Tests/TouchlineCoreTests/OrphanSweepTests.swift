import Testing
import TouchlineCore

/// The cluster's reconciliation with Apple's list: an unaccounted channel is deleted only when a
/// round at least the confirmation age after the first still finds it unaccounted.
@Suite("Orphan sweep")
struct OrphanSweepTests {
    let start = UnixTime(seconds: 1_767_225_600)

    @Test func anOrphanIsDeletedOnlyOnceItHasBeenUnaccountedForTheConfirmationAge() {
        var sweep = OrphanSweep(confirmationAge: .seconds(600))
        #expect(sweep.round(listed: ["a", "orphan"], accounted: ["a"], at: start).isEmpty, "a suspect the first time")
        #expect(sweep.round(listed: ["a", "orphan"], accounted: ["a"], at: start + .seconds(599)).isEmpty, "not old enough yet")
        #expect(sweep.round(listed: ["a", "orphan"], accounted: ["a"], at: start + .seconds(600)) == ["orphan"])
        #expect(sweep.suspects.isEmpty)
    }

    /// A create answered by Apple whose id was not saved yet when the gateways were asked: the
    /// next round finds it accounted for, and it is never deleted.
    @Test func aCreateWhoseIdWasBeingSavedIsNeverDeleted() {
        var sweep = OrphanSweep(confirmationAge: .seconds(600))
        #expect(sweep.round(listed: ["a", "new"], accounted: ["a"], at: start).isEmpty)
        #expect(sweep.round(listed: ["a", "new"], accounted: ["a", "new"], at: start + .seconds(600)).isEmpty)
        #expect(sweep.suspects.isEmpty, "cleared once accounted for")
        // Unaccounted again later (its channel deleted from the store while Apple still lists
        // it, say): it starts over as a new suspect rather than being deleted at once.
        #expect(sweep.round(listed: ["new"], accounted: [], at: start + .seconds(1_200)).isEmpty)
        #expect(sweep.round(listed: ["new"], accounted: [], at: start + .seconds(1_800)) == ["new"])
    }

    @Test func aSuspectNoLongerListedIsForgotten() {
        var sweep = OrphanSweep(confirmationAge: .seconds(60))
        _ = sweep.round(listed: ["gone", "kept"], accounted: [], at: start)
        #expect(sweep.round(listed: ["kept"], accounted: [], at: start + .seconds(30)).isEmpty)
        #expect(sweep.suspects.keys.sorted() == ["kept"])
        #expect(sweep.round(listed: ["gone", "kept"], accounted: [], at: start + .seconds(60)) == ["kept"],
                "'gone' came back: a new suspect, not a confirmed one")
        #expect(sweep.suspects.keys.sorted() == ["gone"])
    }

    @Test func deletionsComeInTheOrderListed() {
        var sweep = OrphanSweep(confirmationAge: .zero)
        #expect(sweep.round(listed: ["c", "a", "b"], accounted: ["a"], at: start) == ["c", "b"])
    }
}
