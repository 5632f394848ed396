/// Bounds the `channel` label's cardinality: the first `limit` channels seen get their own label,
/// every later one is reported under ``otherLabel``.
///
/// Admission is sticky (a channel keeps its label for as long as it exists, so its series never
/// jumps between its own label and `_other`), and a slot is freed when its channel is released
/// (deleted). Confined to the loop that owns the channels.
public struct ChannelLabelCap: Sendable {
    /// The label of every channel beyond the cap.
    public static let otherLabel = "_other"
    public let limit: Int
    private var admitted: Set<String> = []

    public init(limit: Int) {
        precondition(limit >= 0, "the channel label limit cannot be negative")
        self.limit = limit
    }

    /// The label for `channelID`: its id while there is room (or it already has one), else `_other`.
    public mutating func label(for channelID: String) -> String {
        if admitted.contains(channelID) { return channelID }
        guard admitted.count < limit else { return Self.otherLabel }
        admitted.insert(channelID)
        return channelID
    }

    /// Frees the slot of a deleted channel for a later one.
    public mutating func release(_ channelID: String) {
        admitted.remove(channelID)
    }

    /// Frees the slots of every channel `isGone` says no longer exists.
    public mutating func release(where isGone: (String) -> Bool) {
        admitted = admitted.filter { !isGone($0) }
    }

    /// Channels that have their own label now.
    public var labelledCount: Int { admitted.count }
}
