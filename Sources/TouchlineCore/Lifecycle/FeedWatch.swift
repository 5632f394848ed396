/// Whether a channel's feed is still coming: stalled when no event arrived for
/// ``stallAfter`` while the match is live, recovered when events come again, and every jump of
/// `seq` (a gap: events the provider numbered and never sent) reported as it is seen.
///
/// Pure: the shell says when events were accepted and whether the match is live, asks for the
/// time to look again (``stallDeadline(live:)``), and reports what comes back.
///
/// Devices see a dead feed by themselves too, later: an activity whose `stale-date` passes
/// shows as stale. This watch is for the provider and the operators, so they hear of it first
/// (docs/content-state.md, "Feed watching").
public struct FeedWatch: Sendable, Equatable {
    /// What the watch saw.
    public enum Report: Sendable, Equatable {
        /// Nothing came for `silence` while the match was live.
        case stalled(lastEventAt: UnixTime, silence: Duration)
        /// Events came again after a stall that began at `since`.
        case recovered(stalledSince: UnixTime)
        /// `seq` went from `from` to `to`, skipping the ones between.
        case gap(from: Int64, to: Int64)
    }

    /// Silence after which a live feed counts as stalled; zero watches nothing.
    public let stallAfter: Duration
    /// When the last event was accepted, or when watching began (a restart: the silence counts
    /// from there, as the time of events before it is not kept).
    public private(set) var lastEventAt: UnixTime
    /// Set while the feed is stalled.
    public private(set) var stalledSince: UnixTime?
    public private(set) var stalls = 0
    public private(set) var gaps = 0
    /// The latest gap.
    public private(set) var lastGap: Gap?

    /// A jump of `seq`: the last one before it and the first after it.
    public struct Gap: Sendable, Equatable {
        public var from: Int64
        public var to: Int64
    }

    public init(stallAfter: Duration, watchingFrom now: UnixTime) {
        self.stallAfter = stallAfter
        lastEventAt = now
    }

    public var isStalled: Bool { stalledSince != nil }

    /// Events with `seqs` (ascending, all above `previousSeq`) were accepted at `now`.
    public mutating func eventsAccepted(previousSeq: Int64, seqs: [Int64], at now: UnixTime) -> [Report] {
        guard !seqs.isEmpty else { return [] }
        var reports: [Report] = []
        if let since = stalledSince {
            reports.append(.recovered(stalledSince: since))
            stalledSince = nil
        }
        var previous = previousSeq
        for seq in seqs {
            // The first event of a channel may start anywhere: only a jump after one counts.
            if previous > 0, seq > previous + 1 {
                reports.append(.gap(from: previous, to: seq))
                gaps += 1
                lastGap = Gap(from: previous, to: seq)
            }
            previous = seq
        }
        lastEventAt = now
        return reports
    }

    /// When the feed turns stalled if nothing arrives; nil when it cannot (not live, already
    /// stalled, or not watched).
    public func stallDeadline(live: Bool) -> UnixTime? {
        guard live, stallAfter > .zero, stalledSince == nil else { return nil }
        return lastEventAt + stallAfter
    }

    /// Looks at the feed at `now` (the timer armed for ``stallDeadline(live:)`` fired; early or
    /// late is harmless).
    public mutating func check(now: UnixTime, live: Bool) -> Report? {
        guard let deadline = stallDeadline(live: live), now >= deadline else { return nil }
        stalledSince = now
        stalls += 1
        return .stalled(lastEventAt: lastEventAt, silence: now - lastEventAt)
    }
}
