/// What a fan-out job must persist to resume after a restart.
///
/// Holds the audience cursor, the counters of ended targets and the window of unended targets
/// (bounded by the job's window size). Targets in flight at checkpoint time are stored as
/// pending: they are sent again after a restart, since their outcome is unknown.
public struct FanOutCheckpoint: Sendable, Codable, Equatable {
    /// A target that has not ended yet.
    public struct PendingTarget: Sendable, Codable, Equatable {
        public var token: String
        /// Sends made so far.
        public var attempts: Int
        /// Not to be sent before this time (per-token back-off), if any.
        public var notBeforeNanoseconds: Int64?

        public init(token: String, attempts: Int, notBeforeNanoseconds: Int64?) {
            self.token = token
            self.attempts = attempts
            self.notBeforeNanoseconds = notBeforeNanoseconds
        }
    }

    /// Audience position after the last fetched page (`nil` before the first).
    public var cursor: String?
    /// Whether the audience has no more tokens after `cursor`.
    public var exhausted: Bool
    public var counters: FanOutCounters
    public var pending: [PendingTarget]

    public init(cursor: String?, exhausted: Bool, counters: FanOutCounters, pending: [PendingTarget]) {
        self.cursor = cursor
        self.exhausted = exhausted
        self.counters = counters
        self.pending = pending
    }
}
