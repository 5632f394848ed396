/// Progress of one fan-out job, as `GET /v1/personal/{job}` shows it.
///
/// Every targeted token ends in exactly one of `sent`, `deadLettered` or `expired`; until then it
/// is `pending`.
public struct FanOutCounters: Sendable, Codable, Equatable {
    /// Tokens pulled from the audience so far.
    public var targeted = 0
    /// Tokens APNs accepted.
    public var sent = 0
    /// Tokens given up on (dead tokens included); `failedByReason` breaks them down.
    public var deadLettered = 0
    /// Tokens not sent because the job's `apns-expiration` passed first.
    public var expired = 0
    /// Sends beyond the first, over all tokens.
    public var retries = 0
    /// Dead-lettered tokens by reason (APNs reason, `Unregistered` for 410, `RetriesExhausted`).
    public var failedByReason: [String: Int] = [:]

    public init() {}

    /// Tokens targeted that have not ended yet.
    public var pending: Int { targeted - sent - deadLettered - expired }
}
