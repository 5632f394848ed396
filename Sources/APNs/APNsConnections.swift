import HTTP2
import TouchlineCore
import TouchlineRuntime

/// An ``APNsClient`` with its own connection pools, one per kind of request (device pushes,
/// broadcasts, channel management), all on one loop. A pool connects on first use, so a
/// purpose that never sends one kind never opens its connections.
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

        public init(pushConnections: Int = 2, managementConnections: Int = 1, maxQueuedRequests: Int = 100_000,
                    tls: TLSConfiguration = .client) {
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
    private let pools: [HTTP2ConnectionPool]

    /// Creates the pools and the client on `loop`. Connections open on first use.
    public init(configuration: APNsConfiguration, providerToken: ProviderToken, options: Options = Options(),
                loop: EventLoop) throws {
        let context = try TLSContext.client(options.tls)
        let build = { @Sendable () throws -> UncheckedResult<(APNsClient, [HTTP2ConnectionPool])> in
            func pool(_ endpoint: APNsEndpoint, _ count: Int) -> HTTP2ConnectionPool {
                HTTP2ConnectionPool(loop: loop, context: context,
                                    configuration: HTTP2PoolConfiguration(host: endpoint.host, port: endpoint.port, connectionCount: count,
                                                                          maxQueuedRequests: options.maxQueuedRequests))
            }
            let push = pool(configuration.environment.pushEndpoint, options.pushConnections)
            let broadcast = pool(configuration.broadcastEndpoint, options.pushConnections)
            let management = pool(configuration.environment.managementEndpoint, options.managementConnections)
            let client = try APNsClient(configuration: configuration, providerToken: providerToken,
                                        pushSender: push, broadcastSender: broadcast, managementSender: management, loop: loop)
            return UncheckedResult((client, [push, broadcast, management]))
        }
        let (client, pools) = (loop.inEventLoop ? try build() : try loop.sync(build)).value
        self.loop = loop
        self.client = client
        self.pools = pools
    }

    /// Which pool ``poolStats`` lists where.
    public enum Pool: Int, CaseIterable, Sendable {
        case device, broadcast, management
    }

    /// Connection and queue figures of each ``Pool``, in its order. Loop only.
    public var poolStats: [HTTP2ConnectionPool.Stats] { pools.map(\.stats) }

    /// Closes every connection gracefully and returns when they are closed: queued requests (and
    /// those the client holds for a provider-token renewal) fail with `.shutdown` at once, in-flight ones may finish within `gracePeriod` (default: the
    /// pools' drain timeout, 30 s) and fail with `.shutdown` after it. The pools close together.
    public func shutdown(gracePeriod: Duration? = nil) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [pools, client] in
                client.failHeldRequests()
                var open = pools.count
                for pool in pools {
                    pool.shutdown(gracePeriod: gracePeriod) {
                        open -= 1
                        if open == 0 { done.resume() }
                    }
                }
            }
        }
    }
}

/// Carries a loop-confined result out of ``EventLoop/sync(_:)``; the value is used on the
/// loop only afterwards.
private struct UncheckedResult<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
