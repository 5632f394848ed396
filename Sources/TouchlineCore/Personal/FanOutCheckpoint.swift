/// What a fan-out job resumes from after a restart: the saved ``FanOutProgress`` folded together.
///
/// Every audience token up to `cursor` has ended or is in `pending`; after the cursor, the
/// tokens in `endedAfterCursor` and `pending` are accounted for and skipped when fetched again.
/// The window of unsettled targets (in flight or not sent yet) is not saved: it is fetched again.
public struct FanOutCheckpoint: Sendable, Codable, Equatable {
    /// A target awaiting another send after a retryable outcome.
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

    /// Audience position up to which every token is settled (`nil` before the first).
    public var cursor: String?
    /// Counters of the settled targets only.
    public var counters: FanOutCounters
    public var pending: [PendingTarget]
    /// Tokens after `cursor` whose send already ended.
    public var endedAfterCursor: [String]

    public init(cursor: String?, counters: FanOutCounters, pending: [PendingTarget], endedAfterCursor: [String]) {
        self.cursor = cursor
        self.counters = counters
        self.pending = pending
        self.endedAfterCursor = endedAfterCursor
    }
}

/// One save of a running job (``FanOutJob/takeProgress()``), to be written in one commit.
///
/// The cursor, the counters and `endedAfterCursor` replace the saved ones; the retry rows are
/// a change set (rows to write or replace, rows to delete) against the previous save.
public struct FanOutProgress: Sendable, Equatable {
    public var cursor: String?
    public var counters: FanOutCounters
    public var retryRows: [FanOutCheckpoint.PendingTarget]
    public var removedRetryRows: [String]
    public var endedAfterCursor: [String]

    public init(cursor: String?, counters: FanOutCounters, retryRows: [FanOutCheckpoint.PendingTarget], removedRetryRows: [String],
                endedAfterCursor: [String]) {
        self.cursor = cursor
        self.counters = counters
        self.retryRows = retryRows
        self.removedRetryRows = removedRetryRows
        self.endedAfterCursor = endedAfterCursor
    }
}
