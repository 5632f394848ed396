import CLibevent

/// The request methods the server knows; evhttp answers anything else itself (501).
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
    case get = "GET", post = "POST", put = "PUT", delete = "DELETE", patch = "PATCH", head = "HEAD", options = "OPTIONS"

    /// The evhttp bit for this method.
    var evhttpType: UInt32 {
        switch self {
        case .get: EVHTTP_REQ_GET.rawValue
        case .post: EVHTTP_REQ_POST.rawValue
        case .put: EVHTTP_REQ_PUT.rawValue
        case .delete: EVHTTP_REQ_DELETE.rawValue
        case .patch: EVHTTP_REQ_PATCH.rawValue
        case .head: EVHTTP_REQ_HEAD.rawValue
        case .options: EVHTTP_REQ_OPTIONS.rawValue
        }
    }

    init?(evhttpType: UInt32) {
        guard let method = HTTPMethod.allCases.first(where: { $0.evhttpType == evhttpType }) else { return nil }
        self = method
    }
}

/// One request received by an ``HTTPServer``, answered later with ``respond(_:)``.
///
/// Loop-confined (`@unchecked Sendable` only so it can travel in closures that come back to its
/// loop): the handler may keep it, do work elsewhere (a durable commit on another thread) and
/// answer from the loop later. Method, target and body are plain values read on arrival; headers
/// are looked up on demand in evhttp's table, until the request is answered or abandoned.
///
/// If the client goes away first, or the server is freed, the request becomes abandoned:
/// ``isPending`` turns false and a late ``respond(_:)`` is dropped safely.
public final class HTTPRequest: @unchecked Sendable {
    public let method: HTTPMethod
    public let target: HTTPRequestTarget
    public let body: [UInt8]
    /// The loop the request must be answered on.
    public let loop: EventLoop
    /// The evhttp request, nil once answered or abandoned.
    private(set) var handle: OpaquePointer?
    private(set) weak var server: HTTPServer?
    /// Runs once when the request is answered or abandoned (a streamed answer's end).
    var finished: (() -> Void)?
    /// True once a streamed answer has begun (``startStream(status:headers:onClose:)``):
    /// ``respond(_:)`` then does nothing.
    var isStreaming = false

    /// The path, still percent-encoded.
    public var path: String { target.path }

    /// True until the request is answered or its connection is gone.
    public var isPending: Bool { handle != nil }

    init(handle: OpaquePointer, method: HTTPMethod, server: HTTPServer) {
        self.handle = handle
        self.method = method
        self.server = server
        self.loop = server.loop
        target = HTTPRequestTarget(parsing: evhttp_request_get_uri(handle).map { String(cString: $0) } ?? "/")
        let input = evhttp_request_get_input_buffer(handle)
        let length = evbuffer_get_length(input)
        body = length == 0 ? [] : [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            count = max(0, Int(evbuffer_remove(input, buffer.baseAddress, length)))
        }
        // The connection holds one reference until the request is answered or abandoned, so a
        // handler may drop the request without it (or the evhttp request) going away unnoticed.
        evhttp_connection_set_closecb(evhttp_request_get_connection(handle), { _, context in
            Unmanaged<HTTPRequest>.fromOpaque(context!).takeUnretainedValue().connectionClosed()
        }, Unmanaged.passRetained(self).toOpaque())
    }

    /// The first value of a request header (case-insensitive), or nil. Loop thread only; nil
    /// once the request is no longer pending.
    public func header(_ name: String) -> String? {
        guard let handle else { return nil }
        return evhttp_find_header(evhttp_request_get_input_headers(handle), name).map { String(cString: $0) }
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
        guard !isStreaming else { return false }
        return complete { handle, closing in response.send(on: handle, closingConnection: closing) }
    }

    /// Hands the request's last write to `send` (with whether the connection must close after
    /// it, as during a shutdown) and finishes the request; false when it is no longer pending.
    func complete(_ send: (_ handle: OpaquePointer, _ closingConnection: Bool) -> Void) -> Bool {
        guard let handle else { return false }
        let connection = evhttp_request_get_connection(handle)!
        let closing = server?.isShuttingDown ?? false
        if let server, closing {
            server.drainAfterResponse(connection)
        } else {
            evhttp_connection_set_closecb(connection, nil, nil)
        }
        send(handle, closing)
        finish()
        return true
    }

    /// The connection closed (client gone, timeout, server freed) before an answer.
    private func connectionClosed() {
        guard let handle else { return }
        // After a client EOF evhttp detaches the request from its connection and leaves it to
        // its user; when the server itself is freed, the connection still owns it and frees it.
        if evhttp_request_get_connection(handle) == nil { evhttp_request_free(handle) }
        finish()
    }

    private func finish() {
        handle = nil
        server?.requestFinished()
        let finished = self.finished
        self.finished = nil
        finished?()
        Unmanaged.passUnretained(self).release()
    }
}

extension HTTPResponse {
    /// Hands the response to evhttp, which adds `Content-Length` and `Date` and writes it.
    func send(on handle: OpaquePointer, closingConnection: Bool) {
        let output = evhttp_request_get_output_headers(handle)
        for header in headers { evhttp_add_header(output, header.name, header.value) }
        if closingConnection { evhttp_add_header(output, "Connection", "close") }
        if !body.isEmpty {
            body.withUnsafeBytes { bytes in
                _ = evbuffer_add(evhttp_request_get_output_buffer(handle), bytes.baseAddress, bytes.count)
            }
        }
        evhttp_send_reply(handle, Int32(status), reasonPhrase(status), nil)
    }
}
