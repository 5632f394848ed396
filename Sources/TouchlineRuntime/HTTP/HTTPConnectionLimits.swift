/// How many clients an ``HTTPServer`` serves at once, how much request body it holds in memory,
/// and how long each phase of a request may take: the limits an operator tunes (the gateway's
/// `http` settings). A client beyond one of them is refused or cut off, never buffered.
public struct HTTPConnectionLimits: Sendable, Equatable {
    /// Connections open at once; one more is answered with a canned 503 `too_many_connections`
    /// (`Connection: close`) and closed, so a flood of connections costs neither memory nor
    /// descriptors beyond this. Default 1024.
    public var maxConnections: Int
    /// Connections one client (an IPv4 address, an IPv6 /64) holds at once, general and probe
    /// together; one more is answered with a canned 429 `too_many_connections_from_address`
    /// and closed, so one client alone cannot fill `maxConnections`. Default 128.
    public var maxConnectionsPerAddress: Int
    /// Connections accepted beyond `maxConnections` that serve only the probe paths
    /// (``HTTPServerConfiguration/probePaths``), one request each: `/healthz` and `/readyz`
    /// still answer a load balancer while the port is full. When all are taken, one that is not
    /// being answered gives its place to the newcomer (see ``HTTPConnectionSlots`` for which).
    /// 0: none. Default 16.
    public var probeConnections: Int
    /// Request bodies held in memory at once, all connections together (a `Content-Length` is
    /// reserved whole when its head arrives, a chunked body as it arrives). A body that would pass
    /// it gets 503 `server_busy` with `Retry-After: 1`. Default 64 MiB, 64 bodies at 1 MiB.
    public var maxBufferedBodyBytes: Int
    /// Request bodies of one API key (the owner the admission hook names) held at once: one key's
    /// heads cannot hold what the others' requests need. A body that would pass it gets 429
    /// `key_body_budget_full` with `Retry-After: 1`. Default 16 MiB, a quarter of the total.
    public var maxBufferedBodyBytesPerKey: Int
    /// A new connection must deliver its first complete request head this long after it was
    /// accepted, or it is closed (with 408 if part of a head came): a connection that sends
    /// nothing holds its slot this long, not for the idle timeout. Default 5 s.
    public var firstRequestTimeout: Duration
    /// A request head must be complete this long after its first byte, or the client gets 408 and
    /// the connection is closed: a head trickled in a byte at a time (slowloris) holds a
    /// connection this long at most. Default 10 s.
    public var headTimeout: Duration
    /// A body must be complete this long after its head, or 408 and close. Default 30 s (a 1 MiB
    /// body needs about 35 KB/s).
    public var bodyTimeout: Duration
    /// A keep-alive connection with no request under way, once it has served one, is closed
    /// after this long. Default 60 s.
    public var idleTimeout: Duration
    /// A connection whose socket takes no byte of a pending response for this long is closed
    /// (a client that stopped reading, also a streamed response's). Default 30 s.
    public var writeTimeout: Duration

    public init(maxConnections: Int = 1024, maxConnectionsPerAddress: Int = 128, probeConnections: Int = 16,
                maxBufferedBodyBytes: Int = 64 << 20, maxBufferedBodyBytesPerKey: Int = 16 << 20,
                firstRequestTimeout: Duration = .seconds(5), headTimeout: Duration = .seconds(10),
                bodyTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(60), writeTimeout: Duration = .seconds(30)) {
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.probeConnections = probeConnections
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
        self.maxBufferedBodyBytesPerKey = maxBufferedBodyBytesPerKey
        self.firstRequestTimeout = firstRequestTimeout
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
    }
}
