/// Where a channel is in its life. Stored as its raw text.
public enum ChannelStatus: String, Sendable, CaseIterable {
    /// Recorded before the APNs create call: the reconciliation intent. A channel still here at
    /// startup had its create response lost (or never sent) and must be matched against Apple's list.
    case creating
    case active
    /// `end` was accepted; the final push and the grace period before deletion are under way.
    case ending
    case ended
    /// APNs said the channel is gone (`ChannelNotRegistered`); kept visible for operators.
    case broken
    case deleted
}
