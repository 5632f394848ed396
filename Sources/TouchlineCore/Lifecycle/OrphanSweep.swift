/// APNs channels no gateway of a cluster accounts for, deleted once it is certain they are
/// orphans: the pure part of the cluster's reconciliation with Apple's list of the app's
/// channels (docs/cluster.md, "Reconciliation with APNs' list-all").
///
/// On one gateway, reconciliation runs at start, before any create is taken, so a channel
/// listed at Apple and held by no record is an orphan at once. In a cluster creates go on all
/// the time on every gateway, and a create whose answer has arrived but whose id is not saved yet
/// looks exactly like an orphan. So a listed id is only a suspect the first time: it is deleted
/// when a later round, at least `confirmationAge` after the first, still finds it listed and
/// unaccounted (no create takes that long to save its id; one that does failed, and its channel
/// is created again by the partition's next owner). A round whose accounts are incomplete (a
/// partition nobody serves at that moment, a gateway that did not answer) must not be fed:
/// a missing partition's channels would all look like orphans.
public struct OrphanSweep: Sendable {
    public let confirmationAge: Duration
    /// Each suspect with the time of the round that first found it unaccounted.
    public private(set) var suspects: [String: UnixTime] = [:]

    public init(confirmationAge: Duration) {
        self.confirmationAge = confirmationAge
    }

    /// One complete round: Apple listed `listed` (before the accounts were gathered), and the
    /// gateways' channels hold `accounted`. Answers the ids to delete at Apple now, in the order
    /// listed; they are no longer suspects. An id accounted for, or no longer listed, is cleared.
    public mutating func round(listed: [String], accounted: Set<String>, at now: UnixTime) -> [String] {
        var stillSuspected: [String: UnixTime] = [:]
        var confirmed: [String] = []
        for id in listed where !accounted.contains(id) {
            let since = suspects[id] ?? now
            if now - since >= confirmationAge {
                confirmed.append(id)
            } else {
                stillSuspected[id] = since
            }
        }
        suspects = stillSuspected
        return confirmed
    }
}
