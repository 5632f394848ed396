extension ChannelEngine {
    /// Where a channel is in its life.
    public enum Phase: String, Sendable, Codable {
        /// Taking updates.
        case live
        /// `end` accepted; the end push is pending or in flight.
        case ending
        /// The end push was answered; the channel is deleted when the grace period is over.
        case ended
        /// Finished: deletion requested, or a broken channel was ended.
        case closed
        /// APNs reported the channel as not registered.
        case broken
    }

    /// A push waiting for its turn: the newest state with everything folded into it.
    public struct PendingPush: Sendable, Equatable {
        /// The content-state as encoded JSON.
        public var state: [UInt8]
        /// The highest importance of the changes folded in.
        public var importance: Importance
        /// The alert of the latest critical change folded in.
        public var alert: LiveActivityAlert?
        /// This is the `end` push.
        public var isEnd: Bool
        /// `dismissal-date` of the end push.
        public var dismissAt: UnixTime?
        /// Already counted as a rate-limit deferral.
        var deferred: Bool

        init(state: [UInt8], importance: Importance, alert: LiveActivityAlert?, isEnd: Bool = false,
             dismissAt: UnixTime? = nil, deferred: Bool = false) {
            self.state = state
            self.importance = importance
            self.alert = importance == .critical ? alert : nil
            self.isEnd = isEnd
            self.dismissAt = dismissAt
            self.deferred = deferred
        }

        /// `newer` folded into `self`: the newer state wins; importance is the maximum; the newer
        /// alert, else the older one, goes with it; an end stays an end.
        func folding(_ newer: PendingPush) -> PendingPush {
            PendingPush(state: newer.state, importance: max(importance, newer.importance), alert: newer.alert ?? alert,
                        isEnd: isEnd || newer.isEnd, dismissAt: newer.dismissAt ?? dismissAt, deferred: deferred)
        }
    }

    /// Everything about a channel that must survive a restart. A push in flight at snapshot time
    /// is folded back into `pending`: its fate is unknown, so it is sent again (with a newer
    /// timestamp) after the restore, which is harmless if it had been delivered.
    public struct Snapshot: Sendable, Equatable {
        public var phase: Phase
        /// The newest accepted content-state.
        public var latestState: [UInt8]?
        /// The content-state of the last push APNs accepted.
        public var lastSentState: [UInt8]?
        public var pending: PendingPush?
        /// When the APNs channel is due for deletion (phase `ended`).
        public var deleteAt: UnixTime?
        public var timestamps: TimestampClock
        /// Times of the priority-10 pushes in the rolling window.
        public var prioritySpends: [UnixTime]
        /// When APNs last accepted a push: the low-importance cadence counts from here.
        public var lastAcceptedAt: UnixTime?
        public var limiter: RateLimiter.State
        /// The sequence number of the last push handed out.
        public var sequence: UInt64
        /// Seeds the back-off jitter (different per channel, so retries do not synchronise).
        public var jitterSeed: UInt64
        public var counters: Counters
    }
}

extension ChannelEngine.Snapshot: Codable {
    private enum CodingKeys: String, CodingKey {
        case phase, latestState, lastSentState, pending, deleteAt, lastTimestamp, prioritySpends, lastAcceptedAt, limiter, sequence, jitterSeed,
             counters
    }

    /// States are written as JSON text, times as integer nanoseconds (`lastTimestamp` in seconds).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(phase, forKey: .phase)
        try c.encodeIfPresent(latestState.map(JSONText.init), forKey: .latestState)
        try c.encodeIfPresent(lastSentState.map(JSONText.init), forKey: .lastSentState)
        try c.encodeIfPresent(pending, forKey: .pending)
        try c.encodeIfPresent(deleteAt?.nanoseconds, forKey: .deleteAt)
        try c.encodeIfPresent(timestamps.last, forKey: .lastTimestamp)
        try c.encode(prioritySpends.map(\.nanoseconds), forKey: .prioritySpends)
        try c.encodeIfPresent(lastAcceptedAt?.nanoseconds, forKey: .lastAcceptedAt)
        try c.encode(limiter, forKey: .limiter)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(jitterSeed, forKey: .jitterSeed)
        try c.encode(counters, forKey: .counters)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        phase = try c.decode(ChannelEngine.Phase.self, forKey: .phase)
        latestState = try c.decodeIfPresent(JSONText.self, forKey: .latestState)?.bytes
        lastSentState = try c.decodeIfPresent(JSONText.self, forKey: .lastSentState)?.bytes
        pending = try c.decodeIfPresent(ChannelEngine.PendingPush.self, forKey: .pending)
        deleteAt = try c.decodeIfPresent(Int64.self, forKey: .deleteAt).map(UnixTime.init(nanoseconds:))
        timestamps = TimestampClock(last: try c.decodeIfPresent(Int64.self, forKey: .lastTimestamp))
        prioritySpends = try c.decode([Int64].self, forKey: .prioritySpends).map(UnixTime.init(nanoseconds:))
        lastAcceptedAt = try c.decodeIfPresent(Int64.self, forKey: .lastAcceptedAt).map(UnixTime.init(nanoseconds:))
        limiter = try c.decode(RateLimiter.State.self, forKey: .limiter)
        sequence = try c.decode(UInt64.self, forKey: .sequence)
        jitterSeed = try c.decode(UInt64.self, forKey: .jitterSeed)
        counters = try c.decode(ChannelEngine.Counters.self, forKey: .counters)
    }
}

extension ChannelEngine.PendingPush: Codable {
    private enum CodingKeys: String, CodingKey { case state, importance, alert, isEnd, dismissAt, deferred }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(JSONText(state), forKey: .state)
        try c.encode(importance, forKey: .importance)
        try c.encodeIfPresent(alert.map(AlertRecord.init), forKey: .alert)
        try c.encode(isEnd, forKey: .isEnd)
        try c.encodeIfPresent(dismissAt?.nanoseconds, forKey: .dismissAt)
        try c.encode(deferred, forKey: .deferred)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(state: try c.decode(JSONText.self, forKey: .state).bytes,
                  importance: try c.decode(Importance.self, forKey: .importance),
                  alert: try c.decodeIfPresent(AlertRecord.self, forKey: .alert)?.alert,
                  isEnd: try c.decode(Bool.self, forKey: .isEnd),
                  dismissAt: try c.decodeIfPresent(Int64.self, forKey: .dismissAt).map(UnixTime.init(nanoseconds:)),
                  deferred: try c.decode(Bool.self, forKey: .deferred))
    }
}

/// Encoded JSON bytes stored as a string (they are UTF-8 text), readable in the saved snapshot.
private struct JSONText: Codable {
    var bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    init(from decoder: any Decoder) throws { bytes = Array(try decoder.singleValueContainer().decode(String.self).utf8) }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(String(decoding: bytes, as: UTF8.self))
    }
}

/// The saved form of a pending alert, in the shape APNs uses: texts are strings or
/// `{"loc-key", "loc-args"}` objects.
private struct AlertRecord: Codable {
    var title: TextRecord
    var body: TextRecord
    var sound: String?

    init(_ alert: LiveActivityAlert) {
        title = TextRecord(alert.title)
        body = TextRecord(alert.body)
        sound = alert.sound
    }

    var alert: LiveActivityAlert { LiveActivityAlert(title: title.text, body: body.text, sound: sound) }

    struct TextRecord: Codable {
        var text: LiveActivityAlert.Text
        init(_ text: LiveActivityAlert.Text) { self.text = text }

        private enum CodingKeys: String, CodingKey {
            case key = "loc-key"
            case arguments = "loc-args"
        }

        init(from decoder: any Decoder) throws {
            if let plain = try? decoder.singleValueContainer().decode(String.self) {
                text = .plain(plain)
            } else {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                text = .localized(key: try c.decode(String.self, forKey: .key), arguments: try c.decode([String].self, forKey: .arguments))
            }
        }

        func encode(to encoder: any Encoder) throws {
            switch text {
            case .plain(let plain):
                var c = encoder.singleValueContainer()
                try c.encode(plain)
            case .localized(let key, let arguments):
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(key, forKey: .key)
                try c.encode(arguments, forKey: .arguments)
            }
        }
    }
}
