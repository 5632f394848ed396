/// How a gateway reaches its NATS cluster: the servers, who it is, and how quickly it notices a
/// lost server. `Sendable` so that the configuration can carry it to every loop.
public struct NATSSettings: Sendable, Equatable {
    /// How the client proves who it is (the server's `authorization` or `accounts` block).
    public enum Authentication: Sendable, Equatable {
        case none
        case token(String)
        case user(String, password: String)
        /// A `.creds` file (user JWT and nkey seed), as `nsc` writes it.
        case credentialsFile(String)
        /// A bare nkey: its public key and the file holding its seed.
        case nkey(publicKey: String, seedFile: String)
    }

    /// TLS to the servers; without it the connection is plain (loopback or a private network).
    public struct TLS: Sendable, Equatable {
        /// PEM file of the CAs that signed the servers' certificates.
        public var caFile: String?
        /// Client certificate chain and key, for servers that verify clients.
        public var certificateFile: String?
        public var keyFile: String?
        /// The name the servers' certificates must carry, when it is not the URL's host.
        public var expectedHostname: String?

        public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
                    expectedHostname: String? = nil) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.expectedHostname = expectedHostname
        }
    }

    /// `nats://host:port` URLs; the client tries them all and learns the rest of the cluster.
    public var servers: [String]
    /// The name the servers show for this connection (the gateway's instance id).
    public var name: String
    public var authentication: Authentication
    public var tls: TLS?
    /// How long one attempt to reach a server may take.
    public var connectTimeout: Duration
    /// Pause between rounds of reconnect attempts; the client reconnects forever.
    public var reconnectWait: Duration
    /// A server that answers no PING for `pingInterval × maxPingsOut` is given up for another:
    /// this bounds how long a dead server goes unnoticed.
    public var pingInterval: Duration
    public var maxPingsOut: Int
    /// How long a JetStream API call or publish waits for the cluster's answer.
    public var requestTimeout: Duration
    /// Publishes that may await their acknowledgement at once (the client stalls beyond).
    public var maximumPendingPublishes: Int
    /// Whether each publish is written to the socket by the call that makes it. Otherwise the
    /// client's flusher thread writes it, and libnats 3.4's flusher holds every write for a
    /// millisecond to gather more: a gateway's log write waits on the cluster's answer before
    /// its push leaves, so that millisecond lay on every event's path (and on a forwarded
    /// event's twice, the request and the owner's write). A socket the server does not drain
    /// blocks the publishing call either way (the client's buffer, once full, is written
    /// by the call too). A publisher after throughput alone (the benchmark's ceiling, thousands
    /// of publishes in flight) leaves it off.
    public var sendsAtOnce: Bool

    /// What the client holds of publishes made while it reconnects (its default is 8 MiB): one
    /// largest message and a little more. Beyond it a publish fails at once and its writer tries
    /// again after the reconnect, under its fence (a write held here and sent late is refused
    /// by the log's compare-and-set once a new owner has written its takeover record).
    public static let reconnectBufferBytes = 2 * 1_048_576

    public init(servers: [String], name: String, authentication: Authentication = .none, tls: TLS? = nil,
                connectTimeout: Duration = .seconds(2), reconnectWait: Duration = .milliseconds(250),
                pingInterval: Duration = .seconds(2), maxPingsOut: Int = 2, requestTimeout: Duration = .seconds(5),
                maximumPendingPublishes: Int = 4_000, sendsAtOnce: Bool = true) {
        self.servers = servers
        self.name = name
        self.authentication = authentication
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.reconnectWait = reconnectWait
        self.pingInterval = pingInterval
        self.maxPingsOut = maxPingsOut
        self.requestTimeout = requestTimeout
        self.maximumPendingPublishes = maximumPendingPublishes
        self.sendsAtOnce = sendsAtOnce
    }
}

extension Duration {
    /// Whole milliseconds, as the NATS client counts time.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
