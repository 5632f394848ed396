import CLibevent

/// A response whose body is written over time, such as a Server-Sent Events stream.
///
/// The head goes out at once (HTTP/1.1: chunked transfer encoding, no `Content-Length`); each
/// ``write(_:)`` sends one chunk; ``finish()`` sends the last chunk. The stream also ends when
/// the client goes away or the server shuts down: then `onClose` runs, on the loop.
///
/// Loop-confined like its request (`@unchecked Sendable` only so closures that run on the loop
/// can capture it). Keep it until `onClose` runs or you finish it; the server keeps it as well
/// while it is open, so it can end it at shutdown.
public final class HTTPResponseStream: @unchecked Sendable {
    public let loop: EventLoop
    private let request: HTTPRequest
    private var onClose: (() -> Void)?
    /// Reused for every chunk (evhttp moves its content out).
    private let chunk: OpaquePointer

    fileprivate init(request: HTTPRequest, onClose: @escaping () -> Void) {
        self.request = request
        self.onClose = onClose
        loop = request.loop
        chunk = evbuffer_new()
    }

    deinit { evbuffer_free(chunk) }

    /// True until the stream is finished or its client is gone.
    public var isOpen: Bool { request.isPending }

    /// Bytes written but not yet taken by the client's socket. A client that stops reading makes
    /// this grow: check it to skip or drop such a client rather than buffer without bound.
    public var bufferedBytes: Int {
        guard let handle = request.handle, let connection = evhttp_request_get_connection(handle),
              let events = evhttp_connection_get_bufferevent(connection) else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(events))
    }

    /// Sends `bytes` as one chunk. Loop thread only; returns false when the stream is closed.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        precondition(loop.inEventLoop, "HTTPResponseStream.write called off its loop")
        guard let handle = request.handle else { return false }
        guard !bytes.isEmpty else { return true }
        bytes.withUnsafeBytes { _ = evbuffer_add(chunk, $0.baseAddress, $0.count) }
        evhttp_send_reply_chunk(handle, chunk)
        return true
    }

    /// Ends the response (the last chunk); `onClose` does not run. Loop thread only.
    public func finish() {
        precondition(loop.inEventLoop, "HTTPResponseStream.finish called off its loop")
        onClose = nil
        end()
    }

    /// Ends the response as the server shuts down; `onClose` runs.
    func close() {
        end()
    }

    private func end() {
        _ = request.complete { handle, closingConnection in
            if closingConnection { evhttp_add_header(evhttp_request_get_output_headers(handle), "Connection", "close") }
            evhttp_send_reply_end(handle)
        }
    }

    /// The request is answered or abandoned: runs `onClose` unless the owner finished it.
    fileprivate func ended() {
        request.server?.streamEnded(self)
        let onClose = self.onClose
        self.onClose = nil
        onClose?()
    }
}

extension HTTPRequest {
    /// Answers with the head of a streamed response and returns the stream to write the body
    /// with; nil when the request is already answered or its client is gone. Loop thread only.
    ///
    /// While the stream is open the connection's read timeout is lifted (a client of a stream
    /// has nothing more to send); the write timeout still drops a client that stops reading.
    /// `onClose` runs on the loop once the stream ends otherwise than by
    /// ``HTTPResponseStream/finish()``: the client left, timed out, or the server is shutting down.
    public func startStream(status: Int = 200, headers: [(name: String, value: String)],
                            onClose: @escaping () -> Void) -> HTTPResponseStream? {
        precondition(loop.inEventLoop, "HTTPRequest.startStream called off its loop")
        guard let handle, !isStreaming, let server else { return nil }
        isStreaming = true
        let stream = HTTPResponseStream(request: self, onClose: onClose)
        finished = { [weak stream] in stream?.ended() }
        server.streamStarted(stream)
        let output = evhttp_request_get_output_headers(handle)
        for header in headers { evhttp_add_header(output, header.name, header.value) }
        evhttp_send_reply_start(handle, Int32(status), reasonPhrase(status))
        if let connection = evhttp_request_get_connection(handle), let events = evhttp_connection_get_bufferevent(connection) {
            var writeTimeout = server.connectionTimeoutValue
            bufferevent_set_timeouts(events, nil, &writeTimeout)
        }
        return stream
    }
}
