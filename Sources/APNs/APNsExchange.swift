import HTTP2

/// How one request to APNs ended, as ``APNsClient/exchangeObserver`` reports it: for counting
/// answers by status and reason and timing them. A request retried after a token renewal is
/// reported once per attempt.
public struct APNsExchange: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// APNs answered; `reason` is its error reason (nil on success).
        case answered(status: Int, reason: String?)
        /// No answer: the connection, pool or server gave up; `kind` names how (`goaway`, `timeout`...).
        case noResponse(kind: String)
    }

    public var endpoint: APNsEndpointKind
    public var outcome: Outcome
    /// From handing the request to the connection pool to its answer (queueing included).
    public var duration: Duration

    public init(endpoint: APNsEndpointKind, outcome: Outcome, duration: Duration) {
        self.endpoint = endpoint
        self.outcome = outcome
        self.duration = duration
    }

    init(endpoint: APNsEndpointKind, failure: APNsError, duration: Duration) {
        let outcome: Outcome
        switch failure.failure {
        case .rejected(let status, let reason): outcome = .answered(status: status, reason: reason.name)
        case .unexpectedResponse(let status, _): outcome = .answered(status: status, reason: "UnexpectedResponse")
        case .transport(let error): outcome = .noResponse(kind: Self.kind(of: error))
        case .invalidRequest, .providerToken: outcome = .noResponse(kind: "not_sent")
        }
        self.init(endpoint: endpoint, outcome: outcome, duration: duration)
    }

    /// A short, bounded name for a transport failure (a metric label, so never free text).
    static func kind(of error: HTTP2RequestError) -> String {
        switch error {
        case .transport, .notConnected: "transport"
        case .goaway: "goaway"
        case .streamReset: "stream_reset"
        case .timedOut: "timeout"
        case .queueFull: "queue_full"
        case .shutdown: "shutdown"
        case .retriesExhausted: "retries_exhausted"
        case .withheld: "withheld"
        }
    }
}
