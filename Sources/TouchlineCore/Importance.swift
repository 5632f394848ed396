/// How much an update matters to someone watching the Live Activity; the channel engine maps
/// it to APNs priority and decides whether the update may light the screen with an alert.
///
/// - `critical`: priority 10 with an alert while the channel's hourly budget lasts (goal, red card);
/// - `normal`: priority 5 (period change, yellow card, substitution);
/// - `low`: priority 5, the first to be coalesced away (clock tick, statistics).
public enum Importance: String, Sendable, Codable, CaseIterable, Comparable {
    case critical
    case normal
    case low

    public static func < (a: Importance, b: Importance) -> Bool { a.rank < b.rank }

    private var rank: Int {
        switch self {
        case .low: 0
        case .normal: 1
        case .critical: 2
        }
    }
}
