/// One match of a match day: its channel, the requests that open and close it, and the facts
/// a run checks its outcome against.
public struct MatchdayMatch: Sendable, Equatable {
    /// Position in `MatchdaySchedule.matches`, from 0.
    public let index: Int
    /// The channel id, e.g. `match-0001`.
    public let channelID: String
    public let homeCode: String
    public let awayCode: String
    /// Goals of each side over the match; the final content-state carries the same score.
    public let homeGoals: Int
    public let awayGoals: Int
    /// When the kickoff event is due, from the start of the run.
    public let kickoffOffsetNanoseconds: Int64
    /// When the end is due: a second or two after the final whistle.
    public let endOffsetNanoseconds: Int64
    /// The body of `POST /v1/channels`: no-storage, the scheduled 0-0 state, the policy of the options if any.
    public let createBody: [UInt8]
    /// Seconds from the end's send to its `dismissAt`.
    public let dismissAfterSeconds: Int

    public init(index: Int, channelID: String, homeCode: String, awayCode: String, homeGoals: Int, awayGoals: Int,
                kickoffOffsetNanoseconds: Int64, endOffsetNanoseconds: Int64, createBody: [UInt8], dismissAfterSeconds: Int) {
        (self.index, self.channelID, self.homeCode, self.awayCode) = (index, channelID, homeCode, awayCode)
        (self.homeGoals, self.awayGoals) = (homeGoals, awayGoals)
        (self.kickoffOffsetNanoseconds, self.endOffsetNanoseconds) = (kickoffOffsetNanoseconds, endOffsetNanoseconds)
        (self.createBody, self.dismissAfterSeconds) = (createBody, dismissAfterSeconds)
    }

    /// Where the match's events go.
    public var eventsPath: String { "/v1/channels/\(channelID)/events" }
    /// Where the match ends.
    public var endPath: String { "/v1/channels/\(channelID)/end" }

    /// The body of `POST /v1/channels/{id}/end`: a last patch carrying `sentAt` (so the end push
    /// is timed like the others) and a `dismissAt` `dismissAfterSeconds` after the send.
    public func endBody(sentAt: Int64) -> [UInt8] {
        let dismissAt = sentAt / 1_000_000_000 + Int64(dismissAfterSeconds)
        return Array(#"{"event":{"patch":{"sentAt":\#(sentAt)}},"dismissAt":\#(dismissAt)}"#.utf8)
    }
}
