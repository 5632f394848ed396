/// A response whose body is written over time, such as a Server-Sent Events stream.
///
/// The head goes out at once (HTTP/1.1: chunked transfer encoding, no `Content-Length`; to an
/// HTTP/1.0 client the body runs until the connection closes); each ``write(_:)`` sends one
/// chunk; ``finish()`` sends the last chunk. The stream also ends when the client goes away or
/// the server shuts down: then `onClose` runs, on the loop.
///
/// A writer that must not outrun its client (a feed export read from the store page by page)
/// writes a piece, then waits with ``whenDrained(_:)`` until the connection has handed all of
/// it to the socket: the stream then holds at most one piece, whatever the body's length.
///
/// Loop-confined like its request (`@unchecked Sendable` only so closures that run on the loop
/// can capture it). Keep it until `onClose` runs or you finish it; the server keeps it as well
/// while it is open, so it can end it at shutdown.
public final class HTTPResponseStream: @unchecked Sendable {
    public let loop: EventLoop
    private let request: HTTPRequest
    private var onClose: (() -> Void)?
    /// The server, to forget the stream once it ends.
    private weak var server: HTTPServer?

    fileprivate init(request: HTTPRequest, server: HTTPServer, onClose: @escaping () -> Void) {
        self.request = request
        self.server = server
        self.onClose = onClose
        loop = request.loop
    }

    /// True until the stream is finished or its client is gone.
    public var isOpen: Bool { request.isPending }

    /// Bytes written but not yet taken by the client's socket. A client that stops reading makes
    /// this grow: check it to skip or drop such a client rather than buffer without bound.
    public var bufferedBytes: Int { request.connection?.bufferedOutputBytes ?? 0 }

    /// Sends `bytes` as one chunk. Loop thread only; returns false when the stream is closed.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        precondition(loop.inEventLoop, "HTTPResponseStream.write called off its loop")
        return request.connection?.writeStream(bytes, for: request) ?? false
    }

    /// Ends the response (the last chunk); `onClose` does not run. Loop thread only.
    public func finish() {
        precondition(loop.inEventLoop, "HTTPResponseStream.finish called off its loop")
        onClose = nil
        request.connection?.endStream(for: request)
    }

    /// Runs `body` once the connection has written everything the stream gave it (at once when
    /// nothing waits), on the loop; never when the stream ends first (`onClose` runs then).
    /// One at a time: a second call replaces the first. Loop thread only.
    public func whenDrained(_ body: @escaping () -> Void) {
        precondition(loop.inEventLoop, "HTTPResponseStream.whenDrained called off its loop")
        guard isOpen else { return }
        guard bufferedBytes > 0 else { return body() }
        request.outputDrained = body
    }

    /// True for a body that is only whole when its owner finishes it (an export): ended any
    /// other way (by ``abort()``, or as the server shuts down), the connection closes without
    /// the last chunk, so the client sees a cut transfer and never takes a part for the whole.
    /// False (the default) for a stream any prefix of which is whole, such as Server-Sent Events.
    public var cutsWhenEnded = false

    /// Ends the response as a failure: the connection closes at once, without the last chunk;
    /// `onClose` runs. Loop thread only.
    public func abort() {
        precondition(loop.inEventLoop, "HTTPResponseStream.abort called off its loop")
        request.connection?.close()
    }

    /// Ends the response as the server shuts down; `onClose` runs.
    func close() {
        if cutsWhenEnded { return request.connection?.close() ?? () }
        request.connection?.endStream(for: request)
    }

    /// The request is answered or abandoned: runs `onClose` unless the owner finished it.
    fileprivate func ended() {
        server?.streamEnded(self)
        let onClose = self.onClose
        self.onClose = nil
        onClose?()
    }
}

extension HTTPRequest {
    /// Answers with the head of a streamed response and returns the stream to write the body
    /// with; nil when the request is already answered or its client is gone. Loop thread only.
    ///
    /// While the stream is open no read deadline applies (a client of a stream has nothing more
    /// to send); the write deadline still drops a client that stops reading. `onClose` runs on
    /// the loop once the stream ends otherwise than by ``HTTPResponseStream/finish()``: the
    /// client left, stopped reading, or the server is shutting down.
    public func startStream(status: Int = 200, headers: [(name: String, value: String)],
                            onClose: @escaping () -> Void) -> HTTPResponseStream? {
        precondition(loop.inEventLoop, "HTTPRequest.startStream called off its loop")
        guard !isStreaming, let connection, connection.startStream(status: status, headers: headers, for: self) else { return nil }
        // Writing the head can find the client gone.
        guard isPending else { return nil }
        isStreaming = true
        let stream = HTTPResponseStream(request: self, server: connection.server, onClose: onClose)
        finished = { [weak stream] in stream?.ended() }
        connection.server.streamStarted(stream)
        return stream
    }
}
