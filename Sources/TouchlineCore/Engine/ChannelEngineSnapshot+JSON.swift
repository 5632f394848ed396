/// The snapshot's JSON, written directly rather than through Foundation's `JSONEncoder`: every
/// state update saves it (and the counters again on their own), so it is written once per
/// written batch of every channel, on the ingest loop. The bytes are what the `Codable` form
/// reads: the same members, with the keys in the order `JSONEncoder`'s `.sortedKeys` gives,
/// optional members left out when absent.
extension ChannelEngine.Snapshot {
    public var encodedJSON: [UInt8] {
        var writer = JSONWriter(capacity: 640 + (latestState?.count ?? 0) + (lastSentState?.count ?? 0) + (pending?.state.count ?? 0))
        writer.openObject()
        writer.key("counters")
        counters.write(to: &writer)
        writer.member("deleteAt", ifPresent: deleteAt?.nanoseconds)
        writer.key("jitterSeed")
        writer.unsigned(jitterSeed)
        writer.member("lastAcceptedAt", ifPresent: lastAcceptedAt?.nanoseconds)
        if let lastSentState {
            writer.key("lastSentState")
            writer.string(String(decoding: lastSentState, as: UTF8.self))
        }
        writer.member("lastTimestamp", ifPresent: timestamps.last)
        if let latestState {
            writer.key("latestState")
            writer.string(String(decoding: latestState, as: UTF8.self))
        }
        writer.key("limiter")
        limiter.write(to: &writer)
        if let pending {
            writer.key("pending")
            pending.write(to: &writer)
        }
        writer.key("phase")
        writer.string(phase.rawValue)
        writer.key("prioritySpends")
        writer.openArray()
        for spend in prioritySpends { writer.integer(spend.nanoseconds) }
        writer.closeArray()
        writer.key("sequence")
        writer.unsigned(sequence)
        writer.closeObject()
        return writer.bytes
    }
}

extension ChannelEngine.Counters {
    /// The counters' JSON, as their `Codable` form reads it (keys sorted).
    public var encodedJSON: [UInt8] {
        var writer = JSONWriter(capacity: 400)
        write(to: &writer)
        return writer.bytes
    }

    fileprivate func write(to writer: inout JSONWriter) {
        func member(_ key: StaticString, _ value: Int) { writer.member(key, Int64(value)) }
        writer.openObject()
        member("budgetDowngrades", budgetDowngrades)
        member("coalesced", coalesced)
        member("dropped", dropped)
        member("eventsApplied", eventsApplied)
        member("immediatePushes", immediatePushes)
        member("lowImportanceDeferrals", lowImportanceDeferrals)
        member("powerConsideratePushes", powerConsideratePushes)
        member("rateLimitDeferrals", rateLimitDeferrals)
        member("rejectedTooLarge", rejectedTooLarge)
        member("reservedPushes", reservedPushes)
        member("retries", retries)
        member("stateChanges", stateChanges)
        member("throttled", throttled)
        member("unchangedStates", unchangedStates)
        writer.closeObject()
    }
}

extension RateLimiter.State {
    fileprivate func write(to writer: inout JSONWriter) {
        writer.openObject()
        writer.member("blockedUntil", ifPresent: blockedUntil?.nanoseconds)
        writer.member("consecutiveFailures", Int64(consecutiveFailures))
        writer.member("refillAnchor", refillAnchor.nanoseconds)
        writer.member("reservedRefillAnchor", reservedRefillAnchor.nanoseconds)
        writer.member("reservedTokens", Int64(reservedTokens))
        writer.member("successesSinceStep", Int64(successesSinceStep))
        writer.member("throttleLevel", Int64(throttleLevel))
        writer.member("tokens", Int64(tokens))
        writer.closeObject()
    }
}

extension ChannelEngine.PendingPush {
    fileprivate func write(to writer: inout JSONWriter) {
        writer.openObject()
        if let alert {
            writer.key("alert")
            writer.openObject()
            writer.key("body")
            Self.write(alert.body, to: &writer)
            if let sound = alert.sound {
                writer.key("sound")
                writer.string(sound)
            }
            writer.key("title")
            Self.write(alert.title, to: &writer)
            writer.closeObject()
        }
        writer.key("deferred")
        writer.bool(deferred)
        writer.member("dismissAt", ifPresent: dismissAt?.nanoseconds)
        writer.key("importance")
        writer.string(importance.rawValue)
        writer.key("isEnd")
        writer.bool(isEnd)
        writer.key("state")
        writer.string(String(decoding: state, as: UTF8.self))
        writer.closeObject()
    }

    /// A string, or `{"loc-args": [...], "loc-key": ...}`, as the saved alert's text.
    private static func write(_ text: LiveActivityAlert.Text, to writer: inout JSONWriter) {
        switch text {
        case .plain(let plain):
            writer.string(plain)
        case .localized(let key, let arguments):
            writer.openObject()
            writer.key("loc-args")
            writer.openArray()
            for argument in arguments { writer.string(argument) }
            writer.closeArray()
            writer.key("loc-key")
            writer.string(key)
            writer.closeObject()
        }
    }
}
