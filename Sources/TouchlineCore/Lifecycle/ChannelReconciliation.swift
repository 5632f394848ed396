/// Matching creates whose answer was lost against Apple's list of the app's channels, at start.
///
/// A channel still `creating` after a restart may have an APNs channel that no record accounts
/// for (the process died between APNs answering and the id being saved). Listing the app's
/// channels finds such orphans; each pending channel adopts the orphan with its storage policy
/// (oldest channel first), pending channels with no orphan left are created again, and orphans
/// nobody adopts are deleted at Apple, so no channel leaks toward the app's limit. Pure: the
/// shell lists, reads each orphan's policy, and performs the plan.
public enum ChannelReconciliation {
    /// A channel without a saved APNs id.
    public struct Pending: Sendable, Equatable {
        public var id: String
        public var storage: ChannelStorage
        public var createdAt: UnixTime
        public init(id: String, storage: ChannelStorage, createdAt: UnixTime) {
            self.id = id
            self.storage = storage
            self.createdAt = createdAt
        }
    }

    /// An APNs channel no record accounts for, with its storage policy when it could be read.
    public struct Orphan: Sendable, Equatable {
        public var apnsID: String
        public var storage: ChannelStorage?
        public init(apnsID: String, storage: ChannelStorage?) {
            self.apnsID = apnsID
            self.storage = storage
        }
    }

    public struct Plan: Sendable, Equatable {
        /// Channel id → the orphan it adopts.
        public var adoptions: [(channelID: String, apnsID: String)]
        /// Pending channels no orphan fits: created again.
        public var recreate: [String]
        /// Orphans nobody adopts (or whose policy could not be read): deleted at Apple.
        public var delete: [String]

        public init(adoptions: [(channelID: String, apnsID: String)], recreate: [String], delete: [String]) {
            self.adoptions = adoptions
            self.recreate = recreate
            self.delete = delete
        }

        public static func == (a: Plan, b: Plan) -> Bool {
            a.adoptions.map { [$0.channelID, $0.apnsID] } == b.adoptions.map { [$0.channelID, $0.apnsID] }
                && a.recreate == b.recreate && a.delete == b.delete
        }
    }

    /// The APNs ids of `listed` that no record in `accounted` holds.
    public static func orphans(listed: [String], accounted: Set<String>) -> [String] {
        listed.filter { !accounted.contains($0) }
    }

    /// Orphans in the order listed go to the oldest pending channel with their storage policy.
    public static func plan(pending: [Pending], orphans: [Orphan]) -> Plan {
        var waiting = pending.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        var plan = Plan(adoptions: [], recreate: [], delete: [])
        for orphan in orphans {
            guard let storage = orphan.storage, let index = waiting.firstIndex(where: { $0.storage == storage }) else {
                plan.delete.append(orphan.apnsID)
                continue
            }
            plan.adoptions.append((waiting[index].id, orphan.apnsID))
            waiting.remove(at: index)
        }
        plan.recreate = waiting.map(\.id)
        return plan
    }
}
