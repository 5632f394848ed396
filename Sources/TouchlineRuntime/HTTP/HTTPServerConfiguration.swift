/// Limits, deadlines and address of an ``HTTPServer``.
///
/// Every input is bounded before it costs memory: a head by size and field count, a body by
/// `maxBodySize` (refused from its `Content-Length` before it is read), all bodies together,
/// connections and each phase of a request by ``connectionLimits``. The defaults suit the
/// provider API: small JSON requests from a few dozen keep-alive connections.
public struct HTTPServerConfiguration: Sendable {
    /// A numeric IPv4 or IPv6 address (no name lookup on the loop).
    public var host: String
    /// 0 picks a free port; read it back from ``HTTPServer/port``.
    public var port: Int
    /// Larger bodies are refused with a JSON 413 naming the size and the limit: as soon as
    /// `Content-Length` says so (nothing of the body is read), or for a chunked body as soon as
    /// a chunk would pass it. Default 1 MiB.
    public var maxBodySize: Int
    /// Larger request heads (request line plus header fields) are refused with 431. Default 16 KiB.
    public var maxHeaderSize: Int
    /// More header field lines are refused with 431. Default 100.
    public var maxHeaderCount: Int
    /// Connections, buffered bodies and deadlines.
    public var connectionLimits: HTTPConnectionLimits
    /// After an answer that closes the connection, the server shuts its sending side and reads
    /// (and drops) what the client still sends for up to this long, so that the client reads the
    /// answer rather than a reset. Default 2 s.
    public var lingerTimeout: Duration
    /// ...and for up to this many bytes. Default 1 MiB.
    public var maxLingerBytes: Int
    /// Other methods are answered with a JSON 501 without reaching the handler.
    public var allowedMethods: Set<HTTPMethod>
    /// Runs on each complete request head before any body byte is read: a refusal is the answer
    /// (the handler never sees the request, the body is never buffered), an admission names whose
    /// share of the body budget the body takes. The gateway refuses a body without a known API
    /// key here, and names the key as the body's owner. nil admits everything, without owners.
    public var admission: (@Sendable (HTTPRequestHead) -> HTTPAdmission)?
    /// The paths (without query) a `GET` may ask for on a connection of the probes' reserve
    /// (``HTTPConnectionLimits/probeConnections``); empty: no reserve. The gateway's are
    /// `/healthz`, `/readyz` and `/metrics`.
    public var probePaths: Set<String>

    public init(host: String = "127.0.0.1", port: Int = 0, maxBodySize: Int = 1 << 20, maxHeaderSize: Int = 16 << 10,
                maxHeaderCount: Int = 100, connectionLimits: HTTPConnectionLimits = HTTPConnectionLimits(),
                lingerTimeout: Duration = .seconds(2), maxLingerBytes: Int = 1 << 20,
                allowedMethods: Set<HTTPMethod> = [.get, .post, .put, .delete, .patch, .options, .trace, .query],
                admission: (@Sendable (HTTPRequestHead) -> HTTPAdmission)? = nil, probePaths: Set<String> = []) {
        self.host = host
        self.port = port
        self.maxBodySize = maxBodySize
        self.maxHeaderSize = maxHeaderSize
        self.maxHeaderCount = maxHeaderCount
        self.connectionLimits = connectionLimits
        self.lingerTimeout = lingerTimeout
        self.maxLingerBytes = maxLingerBytes
        self.allowedMethods = allowedMethods
        self.admission = admission
        self.probePaths = probePaths
    }

    /// The parser's bounds for these limits.
    var parserLimits: HTTP1ParserLimits {
        HTTP1ParserLimits(maxHeadBytes: maxHeaderSize, maxHeaderCount: maxHeaderCount, maxBodyBytes: maxBodySize)
    }
}
