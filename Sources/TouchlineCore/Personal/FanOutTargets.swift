/// One target of a fan-out job while it has not ended: fetched, waiting, in back-off or in flight.
struct FanOutTarget: Sendable {
    /// Sends APNs may have processed (answers, and failures it may have acted on); the one
    /// in flight is included until its outcome says it was not processed.
    var attempts: Int
    /// Sends APNs provably did not process (``PersonalOutcome/notProcessed``), since the job
    /// started or resumed: bounded by the policy's `maxHandBacks`, not saved.
    var handBacks = 0
    var notBefore: UnixTime?
    var isInFlight = false
    /// An outcome asked for a retry: from the next progress on, a durable retry row stands
    /// for this target, so a restart finds it without fetching the audience again.
    var awaitsRetry = false
}

/// The unended targets of a fan-out job, each in a slot that its ``FanOutJob/TargetID`` names.
///
/// A send names its target's slot and its outcome comes back with it, so no token is hashed on
/// a push's way. Tokens are 64 to 200 bytes of text; keyed by them, the job's dictionary cost
/// about a tenth of a kickoff's CPU per push, most of it rehashing neighbouring keys on every
/// removal. A slot is reused once its target ends; its generation then moves on, so an id kept
/// from before (a late outcome, a stale queue entry) no longer names a live target.
struct FanOutTargets: Sendable {
    private struct Slot: Sendable {
        var token: String
        var target: FanOutTarget
        var generation: UInt32
        var isLive: Bool
    }

    private var slots: [Slot] = []
    private var freeSlots: [Int32] = []

    /// Live targets: every slot but the free ones.
    var count: Int { slots.count - freeSlots.count }

    /// Holds `target` for `token` and names it.
    mutating func insert(_ token: String, _ target: FanOutTarget) -> FanOutJob.TargetID {
        if let slot = freeSlots.popLast() {
            let index = Int(slot)
            slots[index].token = token
            slots[index].target = target
            slots[index].isLive = true
            return FanOutJob.TargetID(slot: slot, generation: slots[index].generation)
        }
        precondition(slots.count < Int(Int32.max), "more targets than a slot number holds")
        slots.append(Slot(token: token, target: target, generation: 0, isLive: true))
        return FanOutJob.TargetID(slot: Int32(slots.count - 1), generation: 0)
    }

    /// Whether `id` names a target that has not ended.
    func isLive(_ id: FanOutJob.TargetID) -> Bool {
        let index = Int(id.slot)
        return index < slots.count && slots[index].isLive && slots[index].generation == id.generation
    }

    /// The live target `id` names (a programming error for any other id).
    subscript(id: FanOutJob.TargetID) -> FanOutTarget {
        get {
            precondition(isLive(id), "a target that has ended")
            return slots[Int(id.slot)].target
        }
        _modify {
            precondition(isLive(id), "a target that has ended")
            yield &slots[Int(id.slot)].target
        }
    }

    /// The token of the live target `id`.
    func token(of id: FanOutJob.TargetID) -> String {
        precondition(isLive(id), "a target that has ended")
        return slots[Int(id.slot)].token
    }

    /// Ends the live target `id`: its slot is free for the next, under a new generation.
    mutating func remove(_ id: FanOutJob.TargetID) -> (token: String, target: FanOutTarget) {
        precondition(isLive(id), "a target that has ended")
        let index = Int(id.slot)
        let ended = (slots[index].token, slots[index].target)
        slots[index].isLive = false
        slots[index].token = ""
        slots[index].generation &+= 1
        freeSlots.append(id.slot)
        return ended
    }

    /// Every live target with its token and id, in slot order.
    func forEachLive(_ body: (FanOutJob.TargetID, String, FanOutTarget) -> Void) {
        for (index, slot) in slots.enumerated() where slot.isLive {
            body(FanOutJob.TargetID(slot: Int32(index), generation: slot.generation), slot.token, slot.target)
        }
    }
}
