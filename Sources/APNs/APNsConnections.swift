import HTTP2
import TouchlineCore
import TouchlineRuntime

/// An ``APNsClient`` with its own connection pools, one per kind of request it sends (device
/// pushes, broadcasts, channel management), all on one loop. Pools connect at once, so the first
/// push does not wait for a TLS handshake; a purpose therefore asks only for the pools it uses
/// (``Options/pools``).
///
/// Broadcasts have a pool of their own even on the same host as device pushes, so
/// `apns.broadcastHost` can move them to another host without touching anything else.
///
/// Each purpose (broadcast, personal pushes) gets its own `APNsConnections`, so their
/// connections, stream limits and queues never mix: a million-token backlog on the personal
/// pools cannot hold back a broadcast.
public final class APNsConnections: Sendable {
    /// How the pools are sized and how TLS is set up.
    public struct Options: Sendable {
        /// Connections to the push host for device pushes, and to the broadcast host for broadcasts.
        public var pushConnections: Int
        /// Connections to the channel-management host (low volume).
        public var managementConnections: Int
        /// Requests a pool may hold while every connection is busy or reconnecting.
        public var maxQueuedRequests: Int
        /// TLS settings; set `caFile` to trust a private CA (the mock APNs).
        public var tls: TLSConfiguration
        /// The pools to open. A request of a kind without its pool fails at once with
        /// `.shutdown`: these connections do not serve it.
        public var pools: Set<Pool>

        public init(pushConnections: Int = 2, managementConnections: Int = 1, maxQueuedRequests: Int = 100_000,
                    tls: TLSConfiguration = .client, pools: Set<Pool> = Set(Pool.allCases)) {
            self.pools = pools
            self.pushConnections = pushConnections
            self.managementConnections = managementConnections
            self.maxQueuedRequests = maxQueuedRequests
            self.tls = tls
        }
    }

    /// The loop that owns the pools and the client.
    public let loop: EventLoop
    /// The typed client; use it on ``loop`` (or through its async wrappers).
    public let client: APNsClient
    private let pools: [Pool: HTTP2ConnectionPool]

    /// Creates the pools and the client on `loop`. Connections open on first use.
    public init(configuration: APNsConfiguration, providerToken: ProviderToken, options: Options = Options(),
                loop: EventLoop) throws {
        let context = try TLSContext.client(options.tls)
        let build = { @Sendable () throws -> UncheckedResult<(APNsClient, [Pool: HTTP2ConnectionPool])> in
            var pools: [Pool: HTTP2ConnectionPool] = [:]
            let connectionToken = APNsConnectionToken()
            for kind in options.pools {
                let (endpoint, count) = switch kind {
                case .device: (configuration.environment.pushEndpoint, options.pushConnections)
                case .broadcast: (configuration.broadcastEndpoint, options.pushConnections)
                case .management: (configuration.environment.managementEndpoint, options.managementConnections)
                }
                pools[kind] = HTTP2ConnectionPool(loop: loop, context: context,
                                                  configuration: HTTP2PoolConfiguration(host: endpoint.host, port: endpoint.port, connectionCount: count,
                                                                                        maxQueuedRequests: options.maxQueuedRequests),
                                                  updateHeldRequest: { [weak connectionToken] in connectionToken?.sign(&$0) })
            }
            connectionToken.pools = Array(pools.values)
            let absent = NoPoolSender()
            let client = try APNsClient(configuration: configuration, providerToken: providerToken, connectionToken: connectionToken,
                                        pushSender: pools[.device] ?? absent, broadcastSender: pools[.broadcast] ?? absent,
                                        managementSender: pools[.management] ?? absent, loop: loop)
            return UncheckedResult((client, pools))
        }
        let (client, pools) = (loop.inEventLoop ? try build() : try loop.sync(build)).value
        self.loop = loop
        self.client = client
        self.pools = pools
    }

    /// The pools, by the kind of request they carry.
    public enum Pool: CaseIterable, Hashable, Sendable {
        case device, broadcast, management
    }

    /// Connection and queue figures of `pool`, nil when these connections have none. Loop only.
    public func stats(of pool: Pool) -> HTTP2ConnectionPool.Stats? { pools[pool]?.stats }

    /// Ends the grace of a ``shutdown(gracePeriod:)`` under way at once (an escalated stop):
    /// requests still unanswered fail as closed locally, so their owners keep them pending.
    public func cutShutdownShort() {
        loop.execute { [pools] in
            for pool in pools.values { pool.cutShutdownShort() }
        }
    }

    /// Closes every connection gracefully and returns when they are closed: queued requests (and
    /// those the client holds for a provider-token renewal) fail with `.shutdown` at once, in-flight ones may finish within `gracePeriod` (default: the
    /// pools' drain timeout, 30 s) and fail with `.shutdown` after it. The pools close together.
    ///
    /// `isCutShort` is asked on the loop as the shutdown begins: true gives no grace (a stop
    /// escalated before this step began; one escalated later calls ``cutShutdownShort()``).
    public func shutdown(gracePeriod: Duration? = nil, isCutShort: @escaping @Sendable () -> Bool = { false }) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [pools, client] in
                client.failHeldRequests()
                var open = pools.count
                if open == 0 { return done.resume() }
                let grace = isCutShort() ? .zero : gracePeriod
                for pool in pools.values {
                    pool.shutdown(gracePeriod: grace) {
                        open -= 1
                        if open == 0 { done.resume() }
                    }
                }
            }
        }
    }
}

/// Stands for a pool a purpose did not ask for: refuses every request at once.
private final class NoPoolSender: HTTP2RequestSender {
    func send(_ request: HTTP2Request, completion: @escaping (Result<HTTP2Response, HTTP2RequestError>) -> Void) {
        completion(.failure(.shutdown))
    }
}

/// Carries a loop-confined result out of ``EventLoop/sync(_:)``; the value is used on the
/// loop only afterwards.
private struct UncheckedResult<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
