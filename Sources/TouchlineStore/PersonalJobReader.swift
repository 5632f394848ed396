import TouchlineCore

/// Reads of committed personal jobs, their retries, dead letters and idempotency records.
///
/// What a reader sees: only committed lists, so a job's cursor and counts never disagree with
/// its retry rows and dead letters. Orders are part of the contract (below), and every read is
/// bounded by its `limit`. An implementation may be confined to the thread that uses it.
public protocol PersonalJobReader: AnyObject {
    /// The job whole (payload, cursor, tokens ended after it), nil when unknown.
    func job(id: String) throws(StoreError) -> PersonalJobRecord?

    /// What the API shows of a job (what clients poll during a fan-out), without reading its
    /// payload or its tokens ended after the cursor; nil when unknown.
    func jobSummary(id: String) throws(StoreError) -> PersonalJobSummary?

    /// Up to `limit` jobs in `status`, oldest first (creation time, then id): at startup
    /// `.pending` and `.running` are the work to resume.
    func jobs(status: PersonalJobStatus, limit: Int) throws(StoreError) -> [PersonalJobRecord]

    /// Up to `limit` of a job's targets waiting for a retry due at or before `time`, earliest first.
    func retriesDue(jobID: String, at time: UnixTime, limit: Int) throws(StoreError) -> [PersonalJobRetry]

    /// Up to `limit` dead letters with `id > afterID` (0 to start), optionally only those in
    /// `status`, of one job and with one reason, in ascending id order (ids are assigned by the
    /// store in commit order): keyset pagination without gaps or repeats.
    func deadLetters(status: DeadLetterStatus?, jobID: String?, reason: String?, after afterID: Int64,
                     limit: Int) throws(StoreError) -> [DeadLetterRecord]

    /// The dead letters with these ids, whatever their status, in id order; unknown ids are missing.
    func deadLetters(ids: [Int64]) throws(StoreError) -> [DeadLetterRecord]

    /// The replay selection: up to `selection.limit` dead letters still `.dead` matching its job
    /// and reason, oldest (lowest id) first. Submit ``TokenOperation/markReplayed(ids:)`` with
    /// their ids in the list that re-queues them; a letter replayed already fails that list.
    func deadLetters(selectedBy selection: DeadLetterSelection) throws(StoreError) -> [DeadLetterRecord]

    /// Those of `tokens` recorded as started into the APNs channel `channel`
    /// (``TokenOperation/recordStarts(channel:tokens:)``), as given.
    func startedTokens(among tokens: [String], into channel: String) throws(StoreError) -> Set<String>

    /// Whether any device is recorded as started into `channel`: a kickoff into a channel with
    /// none (and no other start into it running) need not look its pages up.
    func hasStarts(into channel: String) throws(StoreError) -> Bool

    /// The record of `key` used by `scope` on `route`, unless it expired by `now` (a record
    /// expires at its `expiresAt`: found strictly before, not at or after).
    func idempotencyRecord(scope: String, route: String, key: String, at now: UnixTime) throws(StoreError) -> IdempotencyRecord?

    /// Idempotency records kept, expired or not (figures and tests).
    func idempotencyRecordCount() throws(StoreError) -> Int

    /// Releases the reader (on its thread).
    func close()
}

