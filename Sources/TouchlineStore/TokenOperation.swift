import TouchlineCore

/// One write on the personal-push side: the token registry, personal jobs and dead letters.
///
/// A parallel enum rather than new ``StoreOperation`` cases: channel batches stay as they are
/// (other backends replay them), and a list of these commits through a ``PersonalStoreWriter``
/// (for SQLite the same ``StoreWriter`` type and its group commit), all-or-nothing,
/// so a job's progress, its target outcomes and a 410's token deactivation land together.
public enum TokenOperation: Sendable, Equatable {
    /// Inserts or re-registers the token (active again, new `registeredAt` and follows) and
    /// deactivates the token it replaces: for an update token, the user's other active update
    /// token of the same channel; for push-to-start, the user's other active push-to-start token.
    case registerToken(TokenRecord)
    /// Removes the token and its follows.
    case deleteToken(String)
    /// APNs answered 410 `Unregistered` with `timestamp`: deactivate the token unless it was
    /// registered after that moment (the device registered it again meanwhile).
    case deactivateToken(String, unlessRegisteredAfter: UnixTime, at: UnixTime)
    /// A partitioned registry's user directory: `note`'s user registered its token. Applied in
    /// the user's partition, it lists the token under the user and replaces the user's earlier
    /// tokens of its kind (``UserDirectoryRows``); a whole registry ignores it (its registrations
    /// replace those themselves).
    case noteUserToken(UserTokenNote)
    /// A partitioned registry's replacement of a user's token, decided in the user's partition
    /// and applied in the token's: deactivate the token `replaced` names (as of `registeredBefore`)
    /// if it is still registered as `replaced` says (its user, kind and activity or app) and
    /// was not registered after that moment.
    case supersedeToken(UserTokenNote, registeredBefore: UnixTime)

    /// Inserts the job; an existing id fails the batch.
    case createJob(PersonalJobRecord)
    /// Moves the job's cursor and replaces its counts (and status, if given).
    case advanceJob(PersonalJobProgress)
    /// Replaces the payload of a job still waiting for its time (`pending`): a scheduled kickoff
    /// moved to the APNs channel that replaced its own. A job that started meanwhile is left as it is.
    case retargetScheduledJob(jobID: String, payload: [UInt8])
    /// Schedules (or reschedules) another attempt for one target.
    case scheduleRetry(PersonalJobRetry)
    /// The target needs no more state (sent or expired after a retry): drops its retry row.
    case clearTarget(jobID: String, token: String)
    /// Records a permanent failure and marks the target dead-lettered.
    case deadLetter(DeadLetterRecord)
    /// Marks dead letters as handed to a replay.
    case markReplayed(ids: [Int64])
    /// Records a webhook event (or a delivery outcome) in this file's outbox, in the same
    /// commit as the job progress or dead letters it reports.
    case webhook(WebhookOperation)

    /// Records that `tokens` were started into the APNs channel `channel` (one generation of a
    /// match): a later start into it leaves them out (``PersonalJobReader/startedTokens(among:into:)``).
    case recordStarts(channel: String, tokens: [String])
    /// The APNs channel is gone (its match ended, was deleted or rolled over): its starts are forgotten.
    case forgetStarts(channel: String)

    /// Remembers a request's `Idempotency-Key` with its answer, in the same list as the jobs the
    /// request created; replaces an expired record of the same key, and fails the list when
    /// the key is still held by another request.
    case rememberIdempotencyKey(IdempotencyRecord)
    /// Deletes at most `limit` idempotency records that expired by then, oldest first.
    case pruneIdempotencyKeys(expiredBy: UnixTime, limit: Int)
}
