import TouchlineCore

/// How one HTTP/2 client connection behaves.
public struct HTTP2ConnectionConfiguration: Sendable {
    /// Server host name or numeric address; resolved afresh for every connection (APNs asks for
    /// uncached lookups so that load spreads over its servers).
    public var host: String
    public var port: Int
    /// Bound on DNS + TCP + TLS + the server's first SETTINGS frame.
    public var connectTimeout: Duration
    /// Requests waiting for a free stream beyond this fail at once with `.queueFull`.
    public var maxQueuedRequests: Int
    /// A PING is sent after this long without any traffic, to find dead connections
    /// (the PING goes out between one and two intervals after the last activity).
    public var idlePingInterval: Duration
    /// The connection is closed when a PING is not acknowledged within this time.
    public var pingTimeout: Duration
    /// After a GOAWAY (or a graceful shutdown) in-flight streams get this long to finish.
    public var drainTimeout: Duration
    /// A request whose response has not completed this long after it was submitted is reset
    /// (RST_STREAM CANCEL) and fails with `.timedOut`, so a server that never answers one stream
    /// cannot hold its caller forever while the connection itself stays busy and alive.
    public var responseTimeout: Duration
    /// How often a connection without an owner re-sends a request the server refused with
    /// REFUSED_STREAM (a pool applies its own retry budget instead).
    public var maxRefusedRetries: Int
    /// Encoded output above this many bytes pauses sending until the socket drains, so the
    /// output buffer stays bounded.
    public var writeHighWaterMark: Int

    public init(host: String, port: Int = 443, connectTimeout: Duration = .seconds(10), maxQueuedRequests: Int = 10_000,
                idlePingInterval: Duration = .seconds(60), pingTimeout: Duration = .seconds(10),
                drainTimeout: Duration = .seconds(30), responseTimeout: Duration = .seconds(30), maxRefusedRetries: Int = 3,
                writeHighWaterMark: Int = 256 * 1024) {
        self.host = host
        self.port = port
        self.connectTimeout = connectTimeout
        self.maxQueuedRequests = maxQueuedRequests
        self.idlePingInterval = idlePingInterval
        self.pingTimeout = pingTimeout
        self.drainTimeout = drainTimeout
        self.responseTimeout = responseTimeout
        self.maxRefusedRetries = maxRefusedRetries
        self.writeHighWaterMark = writeHighWaterMark
    }
}

/// How a pool of HTTP/2 connections to one `host:port` behaves.
///
/// APNs recommends several long-lived connections for volume and treats rapid reconnects as
/// abuse: hence a fixed connection count, reconnects spaced by ``backoff``, and a bounded number
/// of attempts per request so that nothing waits forever when the server is unreachable.
public struct HTTP2PoolConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Connections kept open (each is replaced when it dies or drains).
    public var connectionCount: Int
    /// Requests the pool holds while no connection is ready, and each connection's own queue
    /// bound; beyond it requests fail with `.queueFull`.
    public var maxQueuedRequests: Int
    public var idlePingInterval: Duration
    public var pingTimeout: Duration
    /// Delay between reconnect attempts of one connection slot; reset once a connection is ready.
    public var backoff: Backoff
    /// How often one request may be handed back (GOAWAY, REFUSED_STREAM, connection lost before
    /// sending) and re-sent, and how many failed connection attempts a waiting request sits
    /// through, before it fails.
    public var maxRetriesPerRequest: Int
    public var connectTimeout: Duration
    /// Grace period for in-flight streams after GOAWAY or during ``HTTP2ConnectionPool/shutdown(gracePeriod:completion:)``.
    public var drainTimeout: Duration
    /// See ``HTTP2ConnectionConfiguration/responseTimeout``.
    public var responseTimeout: Duration

    public init(host: String, port: Int = 443, connectionCount: Int = 2, maxQueuedRequests: Int = 10_000,
                idlePingInterval: Duration = .seconds(60), pingTimeout: Duration = .seconds(10),
                backoff: Backoff = Backoff(), maxRetriesPerRequest: Int = 3, connectTimeout: Duration = .seconds(10),
                drainTimeout: Duration = .seconds(30), responseTimeout: Duration = .seconds(30)) {
        precondition(connectionCount > 0 && maxQueuedRequests > 0 && maxRetriesPerRequest >= 0)
        self.host = host
        self.port = port
        self.connectionCount = connectionCount
        self.maxQueuedRequests = maxQueuedRequests
        self.idlePingInterval = idlePingInterval
        self.pingTimeout = pingTimeout
        self.backoff = backoff
        self.maxRetriesPerRequest = maxRetriesPerRequest
        self.connectTimeout = connectTimeout
        self.drainTimeout = drainTimeout
        self.responseTimeout = responseTimeout
    }

    /// The settings of each connection of the pool (refused streams are retried by the pool).
    var connection: HTTP2ConnectionConfiguration {
        HTTP2ConnectionConfiguration(host: host, port: port, connectTimeout: connectTimeout, maxQueuedRequests: maxQueuedRequests,
                                     idlePingInterval: idlePingInterval, pingTimeout: pingTimeout, drainTimeout: drainTimeout,
                                     responseTimeout: responseTimeout, maxRefusedRetries: maxRetriesPerRequest)
    }
}
