extension ChannelEngine {
    /// `apns-priority` of a push.
    public enum Priority: Int, Sendable, Codable {
        /// Delivered at once; counts against the priority-10 budget.
        case immediate = 10
        /// Delivered when power allows; free of the budget.
        case powerConsiderate = 5
    }

    /// One broadcast push for the shell to publish on the channel.
    public struct OutgoingPush: Sendable, Equatable {
        /// Identifies the push when its result is reported back (`pushSucceeded`/`pushFailed`).
        public var sequence: UInt64
        /// The request body, `{"aps":{...}}`, at most ``ChannelEngine/maximumPayloadSize`` bytes.
        public var payload: [UInt8]
        public var priority: Priority
        /// The `apns-expiration` header value: 0 (try once, store nothing) on no-storage channels.
        public var expiration: Int64
        /// The `aps.timestamp` written into the payload.
        public var timestamp: UnixTime
        /// True for the `end` push.
        public var isEnd: Bool
    }

    /// What the shell must do after a call into the engine, in order.
    public enum Action: Sendable, Equatable {
        /// Publish this push; report its outcome with `pushSucceeded` or `pushFailed`.
        case send(OutgoingPush)
        /// Call `tick(now:)` at (or after) this time; replaces any timer armed before.
        case armTimer(at: UnixTime)
        /// Durable state changed: save `snapshot` (the set says which part).
        case persist(Persisted)
        /// The `end` has been delivered and the grace period is over: delete the APNs channel.
        case deleteChannel
        /// APNs no longer knows the channel: show it as broken to operators; nothing more is sent.
        case markBroken(reason: String)

        /// Why a channel is broken after APNs answered `ChannelNotRegistered`: the reason the engine
        /// gives, and the one a channel stored as broken is shown with after a restart.
        public static let channelNotRegisteredReason = "APNs reports the channel as not registered (ChannelNotRegistered)"
    }

    /// Which parts of the snapshot changed.
    public struct Persisted: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Content: latest, pending and last sent state, phase.
        public static let content = Persisted(rawValue: 1)
        /// Delivery bookkeeping: timestamp clock, priority-10 spends, limiter, sequence.
        public static let delivery = Persisted(rawValue: 2)
    }

    /// Outcome of a push as the shell classified the APNs answer.
    public enum PushFailure: Sendable, Equatable {
        /// 429 for this channel: back off and slow down this channel only.
        case throttled
        /// 5xx or a transport failure: try again after a back-off delay.
        case retryLater
        /// `ChannelNotRegistered`: the channel is gone; stop publishing.
        case channelGone
        /// The request can never succeed as is (a bug or rejected data): forget this push.
        case dropped
    }

    /// Why the engine refused an input. The state is unchanged.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The push for this state would exceed the payload limit.
        case payloadTooLarge(size: Int, limit: Int)
        /// The channel has ended; it takes no more updates.
        case channelEnded
        /// APNs reported the channel as not registered; it takes no more updates.
        case channelBroken
        /// `end` without a final state on a channel that never had one.
        case noContentState

        public var description: String {
            switch self {
            case .payloadTooLarge(let size, let limit): "the push payload would be \(size) bytes, over the limit of \(limit) bytes"
            case .channelEnded: "the channel has ended"
            case .channelBroken: "APNs no longer knows this channel (ChannelNotRegistered)"
            case .noContentState: "the channel has no content-state to end with"
            }
        }
    }

    /// Running totals, for metrics.
    public struct Counters: Sendable, Equatable, Codable {
        /// Inputs accepted (`apply` and `end`).
        public var eventsApplied = 0
        /// Accepted inputs whose state differed from the latest one.
        public var stateChanges = 0
        /// Accepted inputs with the same state as the latest one (no push).
        public var unchangedStates = 0
        /// Inputs refused for size.
        public var rejectedTooLarge = 0
        public var immediatePushes = 0
        public var powerConsideratePushes = 0
        /// Pending states replaced by a newer one before they were sent.
        public var coalesced = 0
        /// Pushes that had to wait for the rate limiter or a back-off.
        public var rateLimitDeferrals = 0
        /// Low-importance changes held for their slower cadence (``ChannelPolicy/lowImportanceInterval``).
        public var lowImportanceDeferrals = 0
        /// Critical pushes that went on a reserved token (``ChannelPolicy/criticalBurst``).
        public var reservedPushes = 0
        /// Critical pushes sent at priority 5 because the priority-10 budget was spent.
        public var budgetDowngrades = 0
        /// 429 answers.
        public var throttled = 0
        /// 5xx and transport failures retried.
        public var retries = 0
        /// Pushes forgotten after an answer that cannot succeed on retry.
        public var dropped = 0

        public init() {}

        private enum CodingKeys: String, CodingKey {
            case eventsApplied, stateChanges, unchangedStates, rejectedTooLarge, immediatePushes, powerConsideratePushes, coalesced,
                 rateLimitDeferrals, lowImportanceDeferrals, reservedPushes, budgetDowngrades, throttled, retries, dropped
        }

        /// A counter missing from a saved snapshot (one saved before the counter existed) is 0.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func read(_ key: CodingKeys) throws -> Int { try c.decodeIfPresent(Int.self, forKey: key) ?? 0 }
            (eventsApplied, stateChanges, unchangedStates) = (try read(.eventsApplied), try read(.stateChanges), try read(.unchangedStates))
            (rejectedTooLarge, immediatePushes) = (try read(.rejectedTooLarge), try read(.immediatePushes))
            (powerConsideratePushes, coalesced) = (try read(.powerConsideratePushes), try read(.coalesced))
            (rateLimitDeferrals, lowImportanceDeferrals) = (try read(.rateLimitDeferrals), try read(.lowImportanceDeferrals))
            (reservedPushes, budgetDowngrades, throttled) = (try read(.reservedPushes), try read(.budgetDowngrades), try read(.throttled))
            (retries, dropped) = (try read(.retries), try read(.dropped))
        }
    }
}
