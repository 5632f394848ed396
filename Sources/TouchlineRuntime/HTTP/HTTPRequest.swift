/// The request methods the server knows; the server answers any other itself (501).
///
/// `TRACE` and `QUERY` are known so that the router answers them like any method a path does not
/// take (405 with `Allow`): a method that HTTP defines is not "unknown" (501), and the gateway
/// never echoes a request back (RFC 9110 9.3.8).
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
    case get = "GET", post = "POST", put = "PUT", delete = "DELETE", patch = "PATCH", head = "HEAD", options = "OPTIONS"
    case trace = "TRACE", query = "QUERY"
}

/// One request received by an ``HTTPServer``, answered later with ``respond(_:)``.
///
/// Loop-confined (`@unchecked Sendable` only so it can travel in closures that come back to its
/// loop): the handler may keep it, do work elsewhere (a durable commit on another thread) and
/// answer from the loop later. Method, target, head and body are plain values read on arrival.
///
/// If the client goes away first, or the server is freed, the request becomes abandoned:
/// ``isPending`` turns false and a late ``respond(_:)`` is dropped safely.
public final class HTTPRequest: @unchecked Sendable {
    public let method: HTTPMethod
    public let target: HTTPRequestTarget
    public let body: [UInt8]
    /// The head as received: every header field, the HTTP version, the body's framing.
    public let head: HTTPRequestHead
    /// The loop the request must be answered on.
    public let loop: EventLoop
    /// The connection it came on, until it is answered or abandoned.
    private(set) weak var connection: HTTP1Connection?
    /// Where the answer of a request that came without a connection goes, until it is answered.
    private var answer: ((HTTPResponse) -> Void)?
    /// Runs once when the request is answered or abandoned (a streamed answer's end).
    var finished: (() -> Void)?
    /// True once a streamed answer has begun (``startStream(status:headers:onClose:)``):
    /// ``respond(_:)`` then does nothing.
    var isStreaming = false
    /// A streamed answer's wait for its output to be written (``HTTPResponseStream/whenDrained(_:)``).
    var outputDrained: (() -> Void)?

    /// The path, still percent-encoded.
    public var path: String { target.path }

    /// True until the request is answered or its connection is gone.
    public var isPending: Bool { connection != nil || answer != nil }

    init(head: HTTPRequestHead, method: HTTPMethod, body: [UInt8], connection: HTTP1Connection) {
        self.head = head
        self.method = method
        self.body = body
        self.connection = connection
        loop = connection.server.loop
        target = HTTPRequestTarget(parsing: head.target)
    }

    /// A request that came another way than over one of a server's connections (in a cluster,
    /// handed over by the gateway that received it): it is routed like any other, and `answer`
    /// receives its response, once, on `loop`. It cannot be answered with a stream.
    public init(method: HTTPMethod, target: String, headers: [HTTPHeaderField], body: [UInt8], loop: EventLoop,
                answer: @escaping (HTTPResponse) -> Void) {
        head = HTTPRequestHead(method: method.rawValue, target: target, minorVersion: 1, fields: headers,
                               framing: body.isEmpty ? .none : .length(UInt64(body.count)), keepAlive: true, expectsContinue: false)
        self.method = method
        self.body = body
        self.loop = loop
        self.answer = answer
        self.target = HTTPRequestTarget(parsing: target)
    }

    /// The server the request arrived at, while it is pending.
    var server: HTTPServer? { connection?.server }

    /// The first value of a request header (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        head.header(name)
    }

    /// Sends `response`. Call once, on the loop; returns false when nothing was sent because the
    /// request was already answered or its connection is gone. A call from another thread is
    /// forwarded to the loop through ``EventLoop/execute(_:)`` and returns false at once, as
    /// the outcome is not known yet.
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool {
        guard loop.inEventLoop else {
            loop.execute { self.respond(response) }
            return false
        }
        if let answer {
            self.answer = nil
            answer(response)
            return true
        }
        guard !isStreaming, let connection else { return false }
        connection.respond(response, to: self)
        return true
    }

    /// Answered or abandoned: no longer pending; `finished` runs once.
    func markFinished() {
        guard connection != nil else { return }
        connection = nil
        outputDrained = nil
        let finished = self.finished
        self.finished = nil
        finished?()
    }
}
