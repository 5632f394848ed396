import TouchlineCore
import TouchlineRuntime

/// `GET /v1/channels/{id}/stats`: one channel as an operator follows it during a match.
extension Channel {
    /// The channel's figures now; on the ingest loop.
    package func statsJSON(now: UnixTime) -> JSONValue {
        let counters = engine.counters
        let lastPush = activity.recentPushes.last
        let errors = counters.throttled + counters.retries + counters.dropped
        return .object(identityJSON + [
            .init("status", .string(status.rawValue)),
            .init("summary", .string(stateSummary)),
            .init("lastPushAt", lastPush.map { .integer($0.sentAt.seconds) } ?? .null),
            .init("lastPushAgeSeconds", lastPush.map { .number((now - $0.sentAt).inSeconds) } ?? .null),
            .init("pushesLastMinute", .integer(Int64(activity.pushes(within: .seconds(60), before: now)))),
            .init("pushInFlight", .bool(engine.hasPushInFlight)),
            .init("updatePending", .bool(engine.pendingState != nil)),
            .init("priorityMix", ["10": .integer(Int64(counters.immediatePushes)), "5": .integer(Int64(counters.powerConsideratePushes))]),
            .init("priorityBudgetRemaining", .integer(Int64(engine.priorityBudgetRemaining(now: now)))),
            .init("priorityBudgetPerHour", .integer(Int64(policy.priorityBudgetPerHour))),
            .init("events", ["received": .integer(Int64(counters.eventsApplied)), "duplicates": .integer(Int64(activity.duplicateEvents)),
                             "stateChanges": .integer(Int64(counters.stateChanges)), "lastSeq": .integer(lastSeq)]),
            .init("coalesced", .integer(Int64(counters.coalesced))),
            .init("rateLimitDeferrals", .integer(Int64(counters.rateLimitDeferrals))),
            .init("lowImportanceDeferrals", .integer(Int64(counters.lowImportanceDeferrals))),
            .init("reservedPushes", .integer(Int64(counters.reservedPushes))),
            .init("budgetDowngrades", .integer(Int64(counters.budgetDowngrades))),
            .init("errors", ["total": .integer(Int64(errors)), "throttled": .integer(Int64(counters.throttled)),
                             "retried": .integer(Int64(counters.retries)), "dropped": .integer(Int64(counters.dropped))]),
            .init("feed", feedJSON),
            .init("recentPushes", .array(activity.recentPushes.map(Self.json))),
            .init("contentState", contentState),
        ])
    }

    /// One line for tables: the score and clock of a match, or the start of the content-state.
    var stateSummary: String {
        if let line = sports?.summary(of: contentState) { return line }
        let text = String(decoding: contentState.encoded, as: UTF8.self)
        return text.count <= 80 ? text : String(text.prefix(79)) + "…"
    }

    private static func json(_ push: ChannelActivity.Push) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init("sequence", .integer(Int64(push.sequence))), .init("sentAt", .number(Double(push.sentAt.nanoseconds) / 1e9)),
            .init("priority", .integer(Int64(push.priority.rawValue))), .init("bytes", .integer(Int64(push.bytes))),
            .init("event", .string(push.isEnd ? "end" : "update")),
            .init("outcome", push.outcome.map(JSONValue.string) ?? .null),
        ]
        // A shadow channel's push is shown whole: the stats are the only place it goes.
        if let payload = push.payload { members.append(.init("payload", .raw(payload))) }
        return .object(members)
    }
}
