/// What happens to one webhook delivery after an attempt: pure, with the time and the jitter
/// source passed in, so the schedule is tested in virtual time.
///
/// A 2xx answer delivers. Anything else (another status, a refused connection, a timeout) is
/// tried again after a capped exponential back-off with jitter, counted from the attempt, until
/// the event is older than `deadAfter`: then the delivery is dead (no more attempts; the event
/// stays readable through `GET /v1/events` until it is pruned). Deliveries are at least once:
/// an attempt whose answer was lost is simply made again, with the same event id.
public struct WebhookRetryPolicy: Sendable, Equatable {
    public var backoff: Backoff
    /// Age of the event after which a failed delivery is given up.
    public var deadAfter: Duration

    public init(backoff: Backoff = Backoff(initial: .seconds(1), maximum: .seconds(300), multiplier: 2, jitter: 0.5),
                deadAfter: Duration = .seconds(86_400)) {
        self.backoff = backoff
        self.deadAfter = deadAfter
    }

    public enum Decision: Sendable, Equatable {
        case delivered
        case retry(at: UnixTime)
        case dead
    }

    /// The decision after attempt number `attempts` (1 for the first) of an event created at
    /// `createdAt` ended at `now`; `succeeded` is a 2xx answer.
    public func decide<R: RandomNumberGenerator>(succeeded: Bool, attempts: Int, createdAt: UnixTime, now: UnixTime,
                                                 using random: inout R) -> Decision {
        if succeeded { return .delivered }
        let next = now + backoff.delay(attempt: max(0, attempts - 1), using: &random)
        return next - createdAt > deadAfter ? .dead : .retry(at: next)
    }
}
