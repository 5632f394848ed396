import TouchlineCore

/// What a channel did recently, for metrics, `/v1/channels/{id}/stats` and the dashboard: the
/// last pushes, duplicates seen, and when the events waiting for a push were accepted.
///
/// The engine's ``ChannelEngine/Counters`` stay the source of the running totals (they are saved
/// with the channel); this holds only what the engine does not know. Kept in memory, so it starts
/// empty after a restart. Confined to the ingest loop with its ``Channel``.
package struct ChannelActivity {
    /// Pushes kept in ``recentPushes``.
    static let historyLimit = 50

    /// One push as the stats show it.
    struct Push {
        var sequence: UInt64
        var sentAt: UnixTime
        var priority: ChannelEngine.Priority
        var bytes: Int
        var isEnd: Bool
        /// `accepted`, an APNs reason, `no_response` or `shadow`; nil while in flight.
        var outcome: String?
        /// The request body, kept for a shadow channel's pushes (which go nowhere else).
        var payload: [UInt8]?
    }

    /// The last pushes sent, oldest first.
    private(set) var recentPushes: [Push] = []
    /// Events acknowledged as duplicates of the last `seq` (not kept across restarts).
    package var duplicateEvents = 0
    /// When the oldest event not yet carried by a sent push was accepted.
    private var oldestUnsentEvent: ContinuousClock.Instant?
    /// The push in flight, its priority, and when the oldest event it carries was accepted.
    private var carried: (sequence: UInt64, priority: ChannelEngine.Priority, since: ContinuousClock.Instant?)?

    /// Events were accepted: they wait for the next push.
    mutating func eventsAccepted(at instant: ContinuousClock.Instant) {
        if oldestUnsentEvent == nil { oldestUnsentEvent = instant }
    }

    /// `push` left for APNs: it carries every event accepted so far.
    mutating func pushSent(_ push: ChannelEngine.OutgoingPush, at now: UnixTime, keepingPayload: Bool = false) {
        carried = (push.sequence, push.priority, oldestUnsentEvent)
        oldestUnsentEvent = nil
        recentPushes.append(Push(sequence: push.sequence, sentAt: now, priority: push.priority, bytes: push.payload.count,
                                 isEnd: push.isEnd, outcome: nil, payload: keepingPayload ? push.payload : nil))
        if recentPushes.count > Self.historyLimit { recentPushes.removeFirst(recentPushes.count - Self.historyLimit) }
    }

    /// APNs answered push `sequence`. When APNs accepted it, returns how long ago its oldest
    /// event was accepted (the ingest-to-APNs latency) and its priority; on a failure that will be
    /// retried, its events wait for the next push again.
    mutating func pushAnswered(sequence: UInt64, outcome: String, retried: Bool,
                               at instant: ContinuousClock.Instant) -> (latency: Duration, priority: ChannelEngine.Priority)? {
        if let index = recentPushes.lastIndex(where: { $0.sequence == sequence }) { recentPushes[index].outcome = outcome }
        guard let carried, carried.sequence == sequence else { return nil }
        self.carried = nil
        guard let since = carried.since else { return nil }
        if outcome == "accepted" { return (instant - since, carried.priority) }
        if retried { oldestUnsentEvent = min(since, oldestUnsentEvent ?? since) }
        return nil
    }

    /// Pushes sent in the `window` before `now`.
    func pushes(within window: Duration, before now: UnixTime) -> Int {
        recentPushes.reversed().prefix { now - $0.sentAt <= window }.count
    }
}
