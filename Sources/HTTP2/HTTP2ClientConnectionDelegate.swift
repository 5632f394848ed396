import TouchlineRuntime

/// Why a connection gives a request back to its owner instead of completing it.
public enum HTTP2RetryReason: Sendable, CustomStringConvertible {
    /// The server reset the stream with REFUSED_STREAM: it did not process the request.
    case refusedStream
    /// The server sent GOAWAY and this request was above its last-stream-id (or not yet sent):
    /// it was not processed.
    case goaway(errorCode: UInt32, reason: String?)
    /// The connection failed or closed. `wasSent` tells whether the request's HEADERS had been
    /// written, i.e. whether the server may have processed it.
    case connectionLost(TransportError, wasSent: Bool)
    /// The connection used up its stream ids (about a billion requests) and is draining.
    case streamIDsExhausted
    /// The pool is replacing the connection (``HTTP2ClientConnection/retire()``): the request
    /// was never sent on it.
    case retired

    public var description: String {
        switch self {
        case .refusedStream: "server refused the stream (REFUSED_STREAM)"
        case .goaway(let code, let reason): HTTP2RequestError.goaway(errorCode: code, reason: reason).description
        case .connectionLost(let error, _): "\(error)"
        case .streamIDsExhausted: "connection ran out of stream ids"
        case .retired: "the connection is being replaced"
        }
    }
}

/// The owner of a connection (normally ``HTTP2ConnectionPool``), told about its life on its loop.
///
/// Every call happens outside nghttp2's callbacks, so the owner may send, close or shut down
/// connections from inside them.
public protocol HTTP2ClientConnectionDelegate: AnyObject {
    /// The server's SETTINGS arrived: the connection takes requests.
    func connectionDidBecomeReady(_ connection: HTTP2ClientConnection)
    /// The connection takes no new requests (GOAWAY, stream ids exhausted, shutdown) and closes
    /// once its in-flight streams are done.
    func connectionDidStartDraining(_ connection: HTTP2ClientConnection)
    /// A request this connection could not complete that may be sent again on another connection.
    /// The owner completes it or sends it elsewhere.
    func connection(_ connection: HTTP2ClientConnection, handsBack request: HTTP2PendingRequest, reason: HTTP2RetryReason)
    /// The connection is closed for good, after all its requests were completed or handed back.
    /// `error` is nil after a clean drain; `wasReady` tells whether it ever became ready.
    func connection(_ connection: HTTP2ClientConnection, didCloseWith error: TransportError?, wasReady: Bool)
}
