/// One request on its way: what to send, whom to tell, and what has come back so far.
///
/// This is the only object allocated per request on the client path. It waits in a queue, becomes
/// an nghttp2 stream's user data while in flight, collects the response, and may be handed from a
/// connection back to its pool to be sent again on another connection (``attempts`` counts that).
///
/// Loop-confined: it belongs to the loop of the connection or pool holding it, hence
/// `@unchecked Sendable`.
public final class HTTP2PendingRequest: @unchecked Sendable {
    /// What is sent; a pool may update a request it held before sending it (see
    /// ``HTTP2ConnectionPool/init(loop:context:configuration:updateHeldRequest:)``).
    @exclusivity(unchecked) public internal(set) var request: HTTP2Request
    /// How many times the request was handed back for another try.
    public internal(set) var attempts = 0
    private var completion: ((Result<HTTP2Response, HTTP2RequestError>) -> Void)?

    // State of the current attempt, reset by `prepareForSubmit()`.
    @exclusivity(unchecked) var streamID: Int32 = 0
    @exclusivity(unchecked) var bodyOffset = 0
    /// The HEADERS frame went to the transport: the server may have seen the request.
    @exclusivity(unchecked) var headersSent = false
    @exclusivity(unchecked) var status = 0
    @exclusivity(unchecked) var responseHeaders = HTTP2ResponseHeaders()
    @exclusivity(unchecked) var responseBody: [UInt8] = []
    /// The HTTP/2 error code the stream closed with.
    @exclusivity(unchecked) var closeErrorCode: UInt32 = 0
    /// Monotonic nanoseconds at submit, for the response timeout.
    @exclusivity(unchecked) var submittedAt: UInt64 = 0
    /// The connection reset the stream because the response timeout passed.
    @exclusivity(unchecked) var timedOut = false
    /// Its HEADERS frame was cancelled, or its stream reset before the body's end left,
    /// because its fence no longer held: the server never had the whole request.
    @exclusivity(unchecked) var withheld = false

    // Links of the connection's in-flight list (see `InFlightList`).
    @exclusivity(unchecked) fileprivate var next: HTTP2PendingRequest?
    @exclusivity(unchecked) fileprivate unowned(unsafe) var previous: HTTP2PendingRequest?

    public init(_ request: HTTP2Request, completion: @escaping (Result<HTTP2Response, HTTP2RequestError>) -> Void) {
        self.request = request
        self.completion = completion
    }

    /// True until ``complete(_:)`` has run.
    public var isPending: Bool { completion != nil }

    /// Delivers the outcome; only the first call has an effect, so a request completes exactly once.
    public func complete(_ result: Result<HTTP2Response, HTTP2RequestError>) {
        guard let completion else {
            assertionFailure("request completed twice")
            return
        }
        self.completion = nil
        completion(result)
    }

    func prepareForSubmit() {
        streamID = 0
        bodyOffset = 0
        headersSent = false
        status = 0
        closeErrorCode = 0
        timedOut = false
        withheld = false
        if !responseHeaders.isEmpty { responseHeaders = HTTP2ResponseHeaders() }
        if !responseBody.isEmpty { responseBody = [] }
    }

    func takeResponse() -> HTTP2Response {
        let response = HTTP2Response(status: status, receivedHeaders: responseHeaders, body: responseBody)
        responseHeaders = HTTP2ResponseHeaders()
        responseBody = []
        return response
    }
}

/// The requests a connection has submitted to nghttp2 and not yet seen closed, oldest first.
///
/// An intrusive doubly linked list: O(1) insert and remove with no storage of its own and no
/// lookup by stream id. The list holds the strong reference that keeps each in-flight request
/// alive; nghttp2's stream user data points at the same object without retaining it.
struct InFlightList {
    private var head: HTTP2PendingRequest?
    private unowned(unsafe) var tail: HTTP2PendingRequest?
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ request: HTTP2PendingRequest) {
        request.next = nil
        request.previous = tail
        if let tail { tail.next = request } else { head = request }
        tail = request
        count += 1
    }

    mutating func remove(_ request: HTTP2PendingRequest) {
        let next = request.next
        if let previous = request.previous { previous.next = next } else { head = next }
        if let next { next.previous = request.previous } else { tail = request.previous }
        request.next = nil
        request.previous = nil
        count -= 1
    }

    /// Visits requests oldest first while `body` returns true.
    func visitOldest(while body: (HTTP2PendingRequest) -> Bool) {
        var current = head
        while let request = current, body(request) { current = request.next }
    }

    mutating func popFirst() -> HTTP2PendingRequest? {
        guard let first = head else { return nil }
        remove(first)
        return first
    }
}
