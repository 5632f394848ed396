import TouchlineCore
import TouchlineRuntime

/// The HTTP method of a request: APNs uses only these three.
public enum HTTP2Method: String, Sendable {
    case get = "GET"
    case post = "POST"
    case delete = "DELETE"
}

/// A header name and value as plain strings: for responses and for building templates.
public struct HTTP2Header: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// The headers that many requests share (method, scheme, authority, push type, topic...).
///
/// Built once; the connection copies them into nghttp2's header list on every submit without
/// creating Swift strings or arrays. Sharing one template across requests is what keeps the
/// per-request CPU cost low (building header arrays per request measured ~35% more CPU).
public final class HeaderTemplate: Sendable {
    public let method: HTTP2Method
    /// Non-pseudo headers, in order. Names must be lowercase.
    public let headers: [HTTP2Header]
    /// `:authority`, e.g. "api.push.apple.com" (a non-default port is appended by the builder).
    public let authority: String

    public init(method: HTTP2Method, authority: String, headers: [HTTP2Header] = []) {
        self.method = method
        self.authority = authority
        self.headers = headers
    }
}

/// Up to six per-request headers stored inline (names are static strings, so no allocation).
///
/// `indexed` controls HPACK indexing: index slow-changing values (authorization, a hot channel
/// id), not per-request ones (request ids, expirations), as APNs keeps a small dynamic table.
public struct DynamicHeaders: Sendable {
    public struct Field: Sendable {
        public var name: StaticString
        public var value: String
        public var indexed: Bool
    }
    public private(set) var count = 0
    private var f0: Field?, f1: Field?, f2: Field?, f3: Field?, f4: Field?, f5: Field?
    public static let capacity = 6

    public init() {}

    /// Appends a header; more than ``capacity`` is a programming error.
    public mutating func add(_ name: StaticString, _ value: String, indexed: Bool = false) {
        let field = Field(name: name, value: value, indexed: indexed)
        switch count {
        case 0: f0 = field
        case 1: f1 = field
        case 2: f2 = field
        case 3: f3 = field
        case 4: f4 = field
        case 5: f5 = field
        default: preconditionFailure("more than \(DynamicHeaders.capacity) dynamic headers")
        }
        count += 1
    }

    /// Gives the first field named `name` the value `value`, keeping its indexing; appends the
    /// field (indexed as `indexed` says) when there is none.
    public mutating func set(_ name: StaticString, _ value: String, indexed: Bool = false) {
        for i in 0..<count where Self.same(self[i].name, name) {
            switch i {
            case 0: f0!.value = value
            case 1: f1!.value = value
            case 2: f2!.value = value
            case 3: f3!.value = value
            case 4: f4!.value = value
            default: f5!.value = value
            }
            return
        }
        add(name, value, indexed: indexed)
    }

    private static func same(_ a: StaticString, _ b: StaticString) -> Bool {
        a.withUTF8Buffer { a in b.withUTF8Buffer { a.elementsEqual($0) } }
    }

    public subscript(index: Int) -> Field {
        switch index {
        case 0: f0!
        case 1: f1!
        case 2: f2!
        case 3: f3!
        case 4: f4!
        default: f5!
        }
    }

    /// The value of the first field named `name`, for tests and logs.
    public func value(of name: String) -> String? {
        for i in 0..<count where self[i].name.description == name { return self[i].value }
        return nil
    }
}

/// One HTTP/2 request, transport-neutral: the APNs layer builds it, a connection sends it.
public struct HTTP2Request: Sendable {
    public var template: HeaderTemplate
    public var path: String
    public var headers: DynamicHeaders
    /// The body; an array shared by many requests is not copied (copy-on-write).
    public var body: [UInt8]
    /// Asked just before the request's HEADERS frame is written (each attempt): when it no
    /// longer holds, the frame is not sent and the request fails with
    /// ``HTTP2RequestError/withheld``. nil: always sent.
    public var fence: (any SideEffectFence)?

    public init(template: HeaderTemplate, path: String, headers: DynamicHeaders = DynamicHeaders(), body: [UInt8] = [],
                fence: (any SideEffectFence)? = nil) {
        self.template = template
        self.path = path
        self.headers = headers
        self.body = body
        self.fence = fence
    }
}

/// A complete HTTP/2 response.
public struct HTTP2Response: Sendable {
    public var status: Int
    /// The headers as received; ``header(_:)`` reads one.
    public var receivedHeaders: HTTP2ResponseHeaders
    public var body: [UInt8]

    public init(status: Int, headers: [HTTP2Header] = [], body: [UInt8] = []) {
        self.init(status: status, receivedHeaders: HTTP2ResponseHeaders(headers), body: body)
    }

    public init(status: Int, receivedHeaders: HTTP2ResponseHeaders, body: [UInt8]) {
        self.status = status
        self.receivedHeaders = receivedHeaders
        self.body = body
    }

    /// Every header, in the order received.
    public var headers: [HTTP2Header] { receivedHeaders.all }

    /// The first value of header `name` (lowercase).
    public func header(_ name: String) -> String? { receivedHeaders.value(of: name) }
}

/// Why a request got no HTTP response.
public enum HTTP2RequestError: Error, Sendable, CustomStringConvertible {
    /// The connection broke (the transport's own words). The request may have reached the server.
    case transport(TransportError)
    /// No connection could be made while the request waited for one, within its retries: it
    /// was never sent. `error` is the last connection attempt's failure.
    case notConnected(TransportError)
    /// The server sent GOAWAY and this stream was at or below its last-stream-id but did not
    /// complete; `reason` is the JSON `reason` of the GOAWAY payload when present.
    case goaway(errorCode: UInt32, reason: String?)
    /// The server reset the stream (an HTTP/2 error code other than REFUSED_STREAM).
    case streamReset(errorCode: UInt32)
    /// No complete response within the connection's response timeout; the stream was reset.
    /// The server may or may not have acted on the request.
    case timedOut(after: Duration)
    /// The request queue is full (back-pressure); try again later or shed load.
    case queueFull
    /// The connection or pool was shut down before the request was sent.
    case shutdown
    /// Retries on fresh connections were exhausted.
    case retriesExhausted(last: String)
    /// Not sent: its fence no longer held when its HEADERS frame was about to be written (the
    /// sender lost the ownership the request was decided under). The server never saw it.
    case withheld

    public var description: String {
        switch self {
        case .transport(let e): "\(e)"
        case .notConnected(let e): "not sent, no connection could be made: \(e)"
        case .goaway(let code, let reason): "server sent GOAWAY (code \(code))" + (reason.map { ": \($0)" } ?? "")
        case .streamReset(let code): "server reset the stream (code \(code))"
        case .timedOut(let after): "no response within \(after)"
        case .queueFull: "request queue is full"
        case .shutdown: "client is shut down"
        case .retriesExhausted(let last): "gave up after retries: \(last)"
        case .withheld: "not sent: the ownership it was decided under no longer held when it was due to leave"
        }
    }
}

extension HTTP2RequestError {
    /// True when the server provably did not process the request: it was never sent (no
    /// connection, queue full, withheld by its fence), or every connection that had it handed it back unprocessed
    /// (REFUSED_STREAM, above a GOAWAY's last-stream-id, lost before its HEADERS went out).
    ///
    /// Callers that count delivery attempts count only the others: a GOAWAY or a reconnect storm
    /// says nothing about the request, and counting it would give up on requests the server
    /// never saw. `shutdown` is not included: a stream still open when a shutdown's grace period
    /// ends fails with it too, and may have been processed.
    public var isUnprocessed: Bool {
        switch self {
        case .notConnected, .queueFull, .retriesExhausted, .withheld: true
        case .transport, .goaway, .streamReset, .timedOut, .shutdown: false
        }
    }
}

/// Something that sends HTTP/2 requests: one connection or a pool of them.
///
/// Loop-confined: call ``send(_:completion:)`` on the sender's loop; the completion runs on that
/// loop too, exactly once per request.
public protocol HTTP2RequestSender: AnyObject {
    func send(_ request: HTTP2Request, completion: @escaping (Result<HTTP2Response, HTTP2RequestError>) -> Void)
}
