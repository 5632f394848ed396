import TouchlineCore
import TouchlineStore

/// The channel facts reported to webhooks, as outbox writes for the batch that changes the
/// channel: the event commits with the change or not at all.
extension ChannelService {
    /// The priority-10 budget's window: at most one `channel.budget_exhausted` per channel in it.
    static let budgetEventInterval = Duration.seconds(3_600)

    /// `type` for `channel`, with its id, APNs id and status; none without webhooks.
    func channelEvent(_ type: WebhookEventType, of channel: Channel, extra: [JSONValue.Member] = []) -> [StoreOperation] {
        guard let outbox = webhooks?.outbox else { return [] }
        var data: [JSONValue.Member] = [.init("channelId", .string(channel.providerID))] + AppChannelID.member(naming: channel.app)
        if let apnsID = channel.apnsChannelID { data.append(.init("apnsChannelId", .string(apnsID))) }
        return [.webhook(outbox.record(type, data + extra))]
    }

    /// The event of a status change worth reporting: ended, broken (`ChannelNotRegistered`), deleted at APNs.
    func statusEvent(of channel: Channel, status: ChannelStatus) -> [StoreOperation] {
        switch status {
        case .ended: channelEvent(.channelEnded, of: channel)
        case .deleted: channelEvent(.channelDeleted, of: channel)
        case .broken: channelEvent(.channelBroken, of: channel, extra: [.init("reason", .string(channel.brokenReason ?? channel.damage ?? "broken"))])
        case .creating, .active, .ending: []
        }
    }

    /// `channel.budget_exhausted` when `engine` downgraded a critical update since the channel's
    /// last look and none was recorded in the budget's window. Notes what it looked at; a caller
    /// whose write fails puts the note back.
    func budgetExhaustedEvent(of channel: Channel, engine: ChannelEngine) -> [StoreOperation] {
        let downgrades = engine.counters.budgetDowngrades
        let seen = channel.downgradesSeen
        channel.downgradesSeen = downgrades
        let now = clock.now()
        guard downgrades > seen, channel.budgetExhaustedReportedAt.map({ now - $0 >= Self.budgetEventInterval }) ?? true else { return [] }
        let events = channelEvent(.channelBudgetExhausted, of: channel, extra: [
            .init("priorityBudgetPerHour", .integer(Int64(channel.policy.priorityBudgetPerHour))),
            .init("budgetDowngrades", .integer(Int64(downgrades))),
        ])
        if !events.isEmpty { channel.budgetExhaustedReportedAt = now }
        return events
    }
}
