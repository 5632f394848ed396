/// The last check of a side effect decided under an ownership (a push to APNs, a write to a
/// partition's log, a personal send): asked at the moment its bytes leave, on whichever thread
/// sends them. When it no longer holds, the side effect is dropped: a gateway that was paused, or
/// cut off, wakes believing it still owns what it owned, and whatever it decided before is still
/// queued (docs/cluster.md, "What each fence protects").
///
/// A gateway on its own has no ownership to lose and gives no fence (nil), which costs nothing.
/// Answering must be cheap: it runs once per request, on the sending loop.
public protocol SideEffectFence: Sendable {
    /// Whether the ownership the side effect was decided under still lets this gateway act now.
    var holds: Bool { get }

    /// An id for the side effect's request that names the ownership it was decided under
    /// (``FenceStamp``), for the requests whose id the sender chooses; nil: the server makes one
    /// up. Asked once per request, when it is made.
    var requestID: String? { get }
}

extension SideEffectFence {
    public var requestID: String? { nil }
}
