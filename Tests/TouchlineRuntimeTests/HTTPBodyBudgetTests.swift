import Testing
import TouchlineRuntime

/// The bodies held in memory: all together under the total, and each owner's (the gateway: each
/// API key's) under its share, so one owner's reservations leave the rest to the others.
@Suite struct HTTPBodyBudgetTests {
    @Test func oneOwnerHoldsAtMostItsShareAndTheRestStaysForTheOthers() {
        var budget = HTTPBodyBudget(limit: 4000, ownerLimit: 1500)
        #expect(budget.reserve(1000, owner: 1) == nil)
        #expect(budget.reserve(1000, owner: 1) == .ownerFull)
        #expect(budget.reserve(500, owner: 1) == nil)
        #expect(budget.reserve(1, owner: 1) == .ownerFull)
        #expect(budget.reserve(1500, owner: 2) == nil)
        #expect(budget.held == 3000 && budget.heldByOwner == [1: 1500, 2: 1500])
        // The total binds too: owner 3 is within its share but the budget holds 3000 of 4000.
        #expect(budget.reserve(1200, owner: 3) == .full)
        #expect(budget.reserve(1000, owner: 3) == nil)
        // An owner over its share is told so even when the total is short as well.
        #expect(budget.reserve(600, owner: 3) == .ownerFull)
        #expect(budget.held == 4000)
    }

    @Test func releasesGiveTheBytesBackToTheOwnerAndTheTotal() {
        var budget = HTTPBodyBudget(limit: 2000, ownerLimit: 1000)
        #expect(budget.reserve(1000, owner: 7) == nil)
        #expect(budget.reserve(800, owner: nil) == nil, "a body without an owner counts in the total only")
        #expect(budget.reserve(300, owner: 8) == .full)
        budget.release(600, owner: 7)
        #expect(budget.heldByOwner == [7: 400] && budget.held == 1200)
        #expect(budget.reserve(600, owner: 7) == nil)
        budget.release(1000, owner: 7)
        budget.release(800, owner: nil)
        budget.release(0, owner: 9)
        #expect(budget.held == 0 && budget.heldByOwner.isEmpty)
    }
}
