import TouchlineRuntime

/// The byte stream under an ``HTTP2ClientConnection``: bytes out, a measure of what is still
/// unsent (for back-pressure), and two ways to close. A ``TLSStream`` in production; an in-memory
/// pipe to a second nghttp2 session in tests, so that the connection's protocol behaviour is
/// tested without TLS, sockets or a loop thread.
///
/// Events come back through the connection's `transportDid…` methods (the ``TLSStreamDelegate``
/// conformance forwards a TLS stream's).
protocol HTTP2ClientTransport: AnyObject {
    /// Bytes written and not yet handed to the peer.
    var pendingOutputBytes: Int { get }
    /// Queues bytes for sending (copied).
    func write(_ bytes: UnsafeRawBufferPointer)
    /// Closes at once; the connection hears of it no more.
    func close()
    /// Closes once what was written has been sent.
    func closeAfterOutput()
}

extension TLSStream: HTTP2ClientTransport {
    func closeAfterOutput() {
        closeAfterFlush()
    }
}
