/// The result of one per-token APNs request, as the personal delivery policy sees it.
///
/// It mirrors `APNsDisposition` (module `APNs`) without importing it, so the policy stays pure;
/// docs/personal-pushes.md gives the mapping the dispatcher applies.
public enum PersonalOutcome: Sendable, Hashable {
    /// APNs answered 200: the push was accepted.
    case accepted
    /// A transient server failure (500, local back-pressure): send again after a back-off.
    case retryLater
    /// The connection went away or broke (503, GOAWAY, reset): send again on another connection.
    case retryOnNewConnection
    /// 429 `TooManyRequests` for this token: wait longer before sending to this token again.
    case throttledToken
    /// 410: the token is no longer valid; `timestampMilliseconds` is APNs' `timestamp` if given.
    case tokenDead(timestampMilliseconds: Int64?)
    /// The request can never succeed as is (a request bug, a bad token): dead-letter it.
    case permanent(reason: String)
    /// Credentials or account setup are wrong: dead-letter it, operators must fix the setup.
    case configuration(reason: String)
    /// APNs provably did not process the request: it was never sent (no connection could be
    /// made, the local queue was full) or every connection tried handed it back (REFUSED_STREAM,
    /// above a GOAWAY's last-stream-id). Not an answer from APNs, so it does not use up one of
    /// `maxAttempts` (a GOAWAY storm would otherwise dead-letter tokens APNs never saw); the
    /// policy's separate `maxHandBacks` bounds it instead, so a transport that never recovers
    /// cannot loop forever.
    case notProcessed
    /// A send that must not be repeated (a push-to-start: a second one starts a second activity)
    /// may have reached APNs, but its answer never came (the response timeout, the connection
    /// lost after sending). It ends the target dead-lettered as `Unconfirmed`: never sent twice
    /// by the gateway, and listed for an operator who may replay it knowing that it may have
    /// been delivered. Sends that may be repeated report ``retryOnNewConnection`` instead.
    case unconfirmed
}

/// What the job does with a target after an outcome.
public enum PersonalDecision: Sendable, Hashable {
    /// Done: APNs accepted the push.
    case sent
    /// Send again, not before `delay` from now.
    case retry(after: Duration)
    /// Done: the token is dead; the caller deactivates it (see `PersonalDeliveryPolicy.shouldDeactivate`).
    case deactivate(timestampMilliseconds: Int64?)
    /// Done: give up on this target and record it with `reason`.
    case deadLetter(reason: String)
}
