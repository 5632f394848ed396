/// The APNs channels the mock holds against those the gateway accounts for.
///
/// Every channel the gateway shows that is not `deleted` holds one APNs channel; every APNs
/// channel belongs to exactly one of them. One the mock holds that no gateway channel names is a
/// leak (it counts toward Apple's limit of 10,000 per app for ever); one the gateway names that
/// the mock does not hold is a channel whose broadcasts go nowhere. Channels whose deletion the
/// provider asked for without an answer yet are `ambiguous`: either side may still hold them.
public struct SoakChannelAudit: Sendable, Equatable {
    /// At the mock, accounted for by no gateway channel.
    public let leaked: Set<String>
    /// Named by a live gateway channel, absent at the mock.
    public let missing: Set<String>
    /// Compared after the ambiguous ones were set aside.
    public let atAPNs: Int
    public let expected: Int

    public init(atAPNs: Set<String>, expected: Set<String>, ambiguous: Set<String> = []) {
        let mock = atAPNs.subtracting(ambiguous), gateway = expected.subtracting(ambiguous)
        leaked = mock.subtracting(gateway)
        missing = gateway.subtracting(mock)
        (self.atAPNs, self.expected) = (mock.count, gateway.count)
    }

    public var matches: Bool { leaked.isEmpty && missing.isEmpty }

    /// `12 / 12`, or `13 / 12 (1 leaked: abc=)`.
    public var summary: String {
        var text = "\(atAPNs) / \(expected)"
        var problems: [String] = []
        if !leaked.isEmpty { problems.append("\(leaked.count) leaked: \(leaked.sorted().prefix(3).joined(separator: ", "))") }
        if !missing.isEmpty { problems.append("\(missing.count) missing: \(missing.sorted().prefix(3).joined(separator: ", "))") }
        if !problems.isEmpty { text += " (" + problems.joined(separator: "; ") + ")" }
        return text
    }
}
