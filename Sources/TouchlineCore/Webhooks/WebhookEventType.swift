/// The facts Touchline reports to webhook receivers (and through `GET /v1/events`).
///
/// The raw values are the wire names: receivers switch on them and configurations subscribe to
/// them, so they never change once published (docs/api.md, "Webhooks").
public enum WebhookEventType: String, Sendable, CaseIterable, Comparable {
    /// A personal job finished; carries its final counts by outcome.
    case personalJobFinished = "personal.job.finished"
    /// One progress save of a personal job dead-lettered targets; carries their count by reason.
    case deadLettersCreated = "personal.deadletters.created"
    /// APNs answered `ChannelNotRegistered`: the channel is broken and no longer publishes.
    case channelBroken = "channel.broken"
    /// APNs refused a channel create with `CannotCreateChannelConfig`: the app's channel limit is reached.
    case channelLimitReached = "channel.limit_reached"
    /// The channel's end was delivered (its final state is out).
    case channelEnded = "channel.ended"
    /// The channel is deleted at APNs (after its end, or by `DELETE /v1/channels/{id}`).
    case channelDeleted = "channel.deleted"
    /// A critical update went at priority 5 because the channel's priority-10 budget was spent
    /// (at most one per channel per hour).
    case channelBudgetExhausted = "channel.budget_exhausted"
    /// No event came for the channel's `feedStallSeconds` while its match was live.
    case channelFeedStalled = "channel.feed_stalled"
    /// Events came again after a stall.
    case channelFeedRecovered = "channel.feed_recovered"
    /// The feed's `seq` jumped: events numbered between the two were never sent.
    case channelFeedGap = "channel.feed_gap"
    /// APNs rejected the gateway's credentials (`InvalidProviderToken`, `BadCertificateEnvironment`...;
    /// at most one per reason per interval).
    case apnsCredentialsRejected = "apns.credentials_rejected"

    public static func < (a: WebhookEventType, b: WebhookEventType) -> Bool { a.rawValue < b.rawValue }
}
