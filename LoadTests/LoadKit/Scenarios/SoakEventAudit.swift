/// What a provider knows about one channel's events, and what it may conclude from what the
/// gateway shows after a crash.
///
/// The soak's events are merge patches `{"seq": n}`, so a channel's content-state names the last
/// event applied. The rules (docs/api.md, "Durability" and "`seq` rules"): every event answered
/// 202 is stored, so `lastSeq` is at least the highest acknowledged `seq`; an event that was sent
/// but not acknowledged (5xx, or its answer lost to the kill) may or may not be stored; nothing
/// can be stored above the highest `seq` ever sent; and the state is that of `lastSeq`.
public struct SentEvents: Sendable, Equatable {
    /// The highest `seq` ever written to the gateway (acknowledged or not).
    public var sent: Int64
    /// The highest `seq` a 202 covered.
    public var acknowledged: Int64

    public init(sent: Int64 = 0, acknowledged: Int64 = 0) { (self.sent, self.acknowledged) = (sent, acknowledged) }

    /// What the gateway shows of the channel: `lastSeq`, and the `seq` its content-state carries
    /// (nil when the state has none: no event applied yet, or a state that lost it).
    public func audit(lastSeq: Int64, stateSeq: Int64?) -> SoakEventAudit {
        if lastSeq < acknowledged { return .acknowledgedMissing(acknowledged - lastSeq) }
        if lastSeq > sent { return .neverSent(lastSeq - sent) }
        if stateSeq != (lastSeq == 0 ? nil : lastSeq) { return .stateDisagrees(lastSeq: lastSeq, stateSeq: stateSeq) }
        return .consistent(unacknowledgedStored: lastSeq - acknowledged)
    }
}

/// The verdict on one channel.
public enum SoakEventAudit: Sendable, Equatable {
    /// As the rules allow; `unacknowledgedStored` events were stored although their 202 never
    /// came (sent before a kill or a failed answer).
    case consistent(unacknowledgedStored: Int64)
    /// This many acknowledged events are missing: a lost 202.
    case acknowledgedMissing(Int64)
    /// The gateway holds this many events above anything ever sent.
    case neverSent(Int64)
    /// The content-state is not that of `lastSeq`.
    case stateDisagrees(lastSeq: Int64, stateSeq: Int64?)

    public var isConsistent: Bool {
        if case .consistent = self { return true }
        return false
    }

    /// One line for a report, naming the channel.
    public func describe(channel: String) -> String {
        switch self {
        case .consistent(let stored): "\(channel): consistent (\(stored) unacknowledged events stored)"
        case .acknowledgedMissing(let count): "\(channel): \(count) acknowledged events missing"
        case .neverSent(let count): "\(channel): \(count) events stored above the highest seq ever sent"
        case .stateDisagrees(let lastSeq, let stateSeq):
            "\(channel): lastSeq \(lastSeq) but the content-state says seq \(stateSeq.map(String.init) ?? "none")"
        }
    }
}
