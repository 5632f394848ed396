import APNs
import HTTP2
import TouchlineCore
import TouchlineRuntime

/// Where the gateway's APNs requests of one purpose go: the loop that owns them, and what that
/// loop reports for metrics. ``BroadcastAPNsDispatch`` (broadcasts and channel management) and
/// ``PersonalAPNsDispatch`` (device pushes) add the requests; ``APNsConnectionsDispatch`` is the
/// implementation on real connections, and the test-support module has one in memory.
///
/// These protocols live in the gateway, not in the `APNs` library: their contract is about the
/// gateway's loops (which loop a request is made on and its answer delivered on), and the `APNs`
/// product stays a plain client for other projects.
///
/// The contract:
/// - **Thread.** Every request and every figure is asked for on ``loop``, and every completion
///   runs on ``loop``: later for a request that is sent, and possibly before the call returns for
///   one refused without being sent (after a shutdown, an invalid request), so callers count a
///   request as in flight before making it.
/// - **Exactly one answer.** Each request's completion runs once: the answer, or the failure
///   (``APNsError``; `isUnprocessed` when the request provably never reached APNs, so it may be
///   sent again).
/// - **No repeats.** A request is sent at most once by the dispatch itself.
/// - **Shutdown.** ``shutdown(gracePeriod:)`` fails what is queued at once (`.shutdown`), lets
///   requests in flight answer within the grace and fails them after it, then returns; requests
///   made afterwards fail with the transport failure `.shutdown`.
package protocol APNsDispatch: AnyObject, Sendable {
    /// The loop requests are made on and answers delivered on.
    var loop: EventLoop { get }

    /// Installs `observer`, told of every exchange with APNs as it ends (on ``loop``). One observer
    /// at a time; installing another replaces it.
    func observeExchanges(_ observer: @escaping (APNsExchange) -> Void)

    /// Connection and queue figures of `pool`, nil when this dispatch has none (on ``loop``).
    func poolStats(_ pool: APNsConnections.Pool) -> HTTP2ConnectionPool.Stats?

    /// The provider token's figures and the requests held for its renewal (on ``loop``).
    func credentialFigures() -> APNsCredentialFigures

    /// Closes the dispatch; see the contract above. `isCutShort` is asked on ``loop`` as the
    /// shutdown begins: true gives no grace (a stop escalated before this step began).
    func shutdown(gracePeriod: Duration?, isCutShort: @escaping @Sendable () -> Bool) async

    /// Ends the grace of a shutdown under way at once (an escalated stop): requests in flight
    /// fail as closed locally (their owners keep them pending). Does nothing before a shutdown.
    func cutShutdownShort()
}

extension APNsDispatch {
    /// ``shutdown(gracePeriod:isCutShort:)`` with its whole grace.
    package func shutdown(gracePeriod: Duration?) async {
        await shutdown(gracePeriod: gracePeriod, isCutShort: { false })
    }
}

/// Broadcasts on APNs channels and the channels' management (create, delete, read, list).
package protocol BroadcastAPNsDispatch: APNsDispatch {
    /// Publishes `broadcast` (push pool); with `fence`, only while it holds as the request leaves.
    func broadcast(_ broadcast: Broadcast, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void)
    /// Creates a channel with `storage`; answers Apple's id for it. With `fence`, only while it holds as the request leaves.
    func createChannel(storage: ChannelStorage, fence: (any SideEffectFence)?, completion: @escaping (Result<String, APNsError>) -> Void)
    /// Deletes a channel. With `fence`, only while it holds as the request leaves.
    func deleteChannel(_ apnsChannelID: String, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void)
    /// The ids of every channel of the app.
    func listChannels(completion: @escaping (Result<[String], APNsError>) -> Void)
    /// A channel's configuration (its storage policy).
    func readChannel(_ apnsChannelID: String, completion: @escaping (Result<APNsChannelConfiguration, APNsError>) -> Void)
}

/// Device pushes of the personal queue (update and push-to-start tokens).
package protocol PersonalAPNsDispatch: APNsDispatch {
    /// Sends `push` to its device token; with `fence`, only while it holds as the request leaves.
    func send(_ push: LiveActivityPush, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void)
}

/// The provider token's state as metrics show it.
package struct APNsCredentialFigures: Sendable {
    package var issuedAt: UnixTime
    package var statistics: ProviderToken.Statistics
    /// The end of the token's renewal hold in force, if any.
    package var renewalHold: UnixTime?
    /// Requests held until the token may be renewed.
    package var heldRequests: Int

    package init(issuedAt: UnixTime, statistics: ProviderToken.Statistics, renewalHold: UnixTime? = nil, heldRequests: Int = 0) {
        self.issuedAt = issuedAt
        self.statistics = statistics
        self.renewalHold = renewalHold
        self.heldRequests = heldRequests
    }
}
