import CNGHTTP2
import TouchlineCore
import TouchlineRuntime

/// Receives an ``HTTP2ServerConnection``'s events on the connection's loop.
public protocol HTTP2ServerConnectionDelegate: AnyObject {
    /// A request arrived complete (END_STREAM seen). Answer it now or later with
    /// ``HTTP2ServerConnection/respond(to:status:headers:body:)``; the request object is
    /// recycled once its stream closes, so keep the stream id, not the object.
    func connection(_ connection: HTTP2ServerConnection, didReceive request: HTTP2ServerRequest)
    /// The connection is closed for good (peer left, GOAWAY finished, TLS or protocol failure).
    /// Delivered on a later loop turn, so the delegate may drop its last reference here.
    func connectionDidClose(_ connection: HTTP2ServerConnection, error: TransportError)
    /// nghttp2 rejected a frame from the peer: a stream opened beyond the announced
    /// SETTINGS_MAX_CONCURRENT_STREAMS (refused) or a protocol violation. A well-behaved client
    /// never causes one, which is what tests assert.
    func connectionDidRejectFrame(_ connection: HTTP2ServerConnection, errorCode: Int32)
    /// The peer sent GOAWAY: it opens no more streams. Called inside the read; answers given
    /// from here go out with the connection's next flush.
    func connectionDidReceiveGoaway(_ connection: HTTP2ServerConnection)
}

extension HTTP2ServerConnectionDelegate {
    public func connectionDidRejectFrame(_ connection: HTTP2ServerConnection, errorCode: Int32) {}
    public func connectionDidReceiveGoaway(_ connection: HTTP2ServerConnection) {}
}

/// How a server connection behaves towards its peer.
public struct HTTP2ServerSettings: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS sent at the start; nghttp2 refuses streams above it.
    public var initialMaxConcurrentStreams: Int
    /// SETTINGS_MAX_HEADER_LIST_SIZE announced to the peer.
    public var maxHeaderListSize: Int
    /// Body bytes kept per request; longer bodies are counted but not stored.
    public var maxBufferedBodyBytes: Int
    /// Stop serializing frames while this many bytes wait in the socket buffer.
    public var outputHighWaterMark: Int

    public init(initialMaxConcurrentStreams: Int = 100, maxHeaderListSize: Int = 8000,
                maxBufferedBodyBytes: Int = 64 * 1024, outputHighWaterMark: Int = 256 * 1024) {
        self.initialMaxConcurrentStreams = initialMaxConcurrentStreams
        self.maxHeaderListSize = maxHeaderListSize
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
        self.outputHighWaterMark = outputHighWaterMark
    }
}

/// The server side of one HTTP/2 connection: an nghttp2 server session over a ``TLSStream``.
/// Loop-confined: create it, call it and release it on its loop's thread only.
///
/// Input is fed to nghttp2 as it arrives; what nghttp2 then has to send is serialized and
/// written in one batch per loop turn. Per-request objects are reused from stream to stream.
public final class HTTP2ServerConnection: @unchecked Sendable {
    public let loop: EventLoop
    public weak var delegate: HTTP2ServerConnectionDelegate?
    private let settings: HTTP2ServerSettings
    private var stream: TLSStream?
    private var session: OpaquePointer?
    /// Every request object of this connection: it owns what nghttp2 refers to by pointer (as
    /// stream user data), so finding a stream's request costs no hashing on our side.
    private var requestObjects: [HTTP2ServerRequest] = []
    /// The objects not attached to a stream.
    private var idle: [HTTP2ServerRequest] = []
    private var openStreams = 0
    /// The request whose header block is arriving, saving a stream lookup per header field.
    private var receivingHeaders: HTTP2ServerRequest?
    private var flushTimer: LoopTimer?
    private var closed = false
    /// Reused to lay out response header names and values for nghttp2 (which copies them).
    private var scratch: [UInt8] = []
    /// Reused name/value array handed to nghttp2: `:status` plus at most ``DynamicHeaders/capacity`` fields.
    private let nva = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: DynamicHeaders.capacity + 1)
    /// Set once GOAWAY is submitted: requests on later streams are not delivered (nghttp2 refuses them).
    private var goawayLastStreamID: Int32?

    /// Wraps an accepted socket: the TLS handshake starts at once, HTTP/2 once ALPN chose "h2".
    /// Returns nil (and closes the socket) if the TLS session cannot be created.
    public static func accept(loop: EventLoop, context: TLSContext, socket fd: Int32,
                              settings: HTTP2ServerSettings, delegate: HTTP2ServerConnectionDelegate) -> HTTP2ServerConnection? {
        let connection = HTTP2ServerConnection(loop: loop, settings: settings)
        connection.delegate = delegate
        guard let stream = TLSStream.accept(loop: loop, context: context, socket: fd, delegate: connection) else { return nil }
        connection.stream = stream
        return connection
    }

    private init(loop: EventLoop, settings: HTTP2ServerSettings) {
        self.loop = loop
        self.settings = settings
        scratch.reserveCapacity(512)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        nva.deallocate()
    }

    /// Sends `status` with `headers` (names lowercase) and `body` on `streamID`.
    /// A stream the peer has meanwhile reset is silently skipped.
    public func respond(to streamID: Int32, status: Int, headers: DynamicHeaders = DynamicHeaders(), body: [UInt8] = []) {
        guard let session, !closed, let request = request(streamID) else { return }
        request.responseBody = body
        request.responseOffset = 0
        layOutHeaders(status: status, headers: headers)
        let rv: Int32 = scratch.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var offset = 0
            for i in 0...headers.count {
                let name: StaticString = i == 0 ? ":status" : headers[i - 1].name
                let valueLength = Int(base[offset]) | Int(base[offset + 1]) << 8
                // Per-response values (ids) stay out of the HPACK table unless marked indexed.
                let indexed = i == 0 || headers[i - 1].indexed
                let flags = NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | (indexed ? 0 : NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
                nva[i] = nghttp2_nv(name: UnsafeMutablePointer(mutating: name.utf8Start), value: base + offset + 2,
                                    namelen: name.utf8CodeUnitCount, valuelen: valueLength, flags: UInt8(flags))
                offset += 2 + valueLength
            }
            let count = headers.count + 1
            if body.isEmpty {
                return nghttp2_submit_response(session, streamID, nva, count, nil)
            }
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: Unmanaged.passUnretained(request).toOpaque()),
                read_callback: { _, _, buf, length, flags, source, _ in
                    let request = Unmanaged<HTTP2ServerRequest>.fromOpaque(source!.pointee.ptr).takeUnretainedValue()
                    let remaining = request.responseBody.count - request.responseOffset
                    let n = min(remaining, length)
                    request.responseBody.withUnsafeBytes { src in
                        buf!.update(from: src.baseAddress!.assumingMemoryBound(to: UInt8.self) + request.responseOffset, count: n)
                    }
                    request.responseOffset += n
                    if request.responseOffset == request.responseBody.count {
                        flags!.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
                    }
                    return n
                })
            return nghttp2_submit_response(session, streamID, nva, count, &provider)
        }
        if rv != 0 {
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_INTERNAL_ERROR.rawValue)
        }
        scheduleFlush()
    }

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS to the peer.
    public func setMaxConcurrentStreams(_ limit: Int) {
        guard let session, !closed else { return }
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: UInt32(clamping: limit))
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
        scheduleFlush()
    }

    /// Sends GOAWAY: streams up to `lastStreamID` are still served, later ones are refused, and
    /// the connection closes once the served streams have finished.
    public func sendGoaway(lastStreamID: Int32, errorCode: UInt32 = 0, debugData: [UInt8] = []) {
        guard let session, !closed, goawayLastStreamID == nil else { return }
        goawayLastStreamID = lastStreamID
        _ = debugData.withUnsafeBufferPointer { data in
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode, data.baseAddress, data.count)
        }
        scheduleFlush()
    }

    /// Closes the connection at once, dropping unanswered streams.
    public func close() {
        stream?.close()
    }

    /// Number of streams with a request in progress or a response not yet sent.
    public var openStreamCount: Int { openStreams }

    // MARK: - Output

    /// Writes each value as a 2-byte little-endian length followed by its bytes into `scratch`.
    private func layOutHeaders(status: Int, headers: DynamicHeaders) {
        scratch.removeAll(keepingCapacity: true)
        appendValue(String(status))
        for i in 0..<headers.count { appendValue(headers[i].value) }
    }

    private func appendValue(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            let n = min(utf8.count, Int(UInt16.max))
            scratch.append(UInt8(n & 0xff))
            scratch.append(UInt8(n >> 8))
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: utf8.prefix(n)))
        }
    }

    /// Flushes once at the next loop turn, however many reads and answers come before it (the
    /// TLS stream hands input over in several pieces per readable event, and delayed answers
    /// are released one by one), so that each batch becomes as few TLS records as possible.
    private func scheduleFlush() {
        guard !closed else { return }
        let timer = flushTimer ?? LoopTimer(loop: loop) { [unowned self] in self.flush() }
        flushTimer = timer
        if !timer.isScheduled { timer.schedule(after: .zero) }
    }

    /// Serializes pending frames into the TLS stream, then closes if the session is finished.
    private func flush() {
        guard let session, let stream, !closed else { return }
        while stream.pendingOutputBytes < settings.outputHighWaterMark {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                stream.close()
                return
            }
            if n == 0 { break }
            stream.write(UnsafeRawBufferPointer(start: data, count: n))
        }
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            stream.closeAfterFlush(linger: .seconds(2))
        }
    }

    // MARK: - Session

    private func startSession() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { session, frame, ctx in
            withConnection(ctx) { $0.beginHeaders(frame!) }
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, ctx in
            withConnection(ctx) {
                $0.header(frame!, UnsafeRawBufferPointer(start: name, count: nameLength), UnsafeRawBufferPointer(start: value, count: valueLength))
            }
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, ctx in
            withConnection(ctx) { $0.dataChunk(streamID, UnsafeRawBufferPointer(start: data, count: length)) }
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, ctx in
            withConnection(ctx) { $0.frameReceived(frame!) }
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { _, _, errorCode, ctx in
            withConnection(ctx) { connection in
                connection.delegate?.connectionDidRejectFrame(connection, errorCode: errorCode)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, ctx in
            withConnection(ctx) { $0.streamClosed(streamID) }
        }
        // APNs ignores PRIORITY, and so does this server: without RFC 7540 priorities nghttp2
        // keeps no dependency tree and no closed streams for it, which is cheaper per stream.
        var options: OpaquePointer?
        nghttp2_option_new(&options)
        defer { nghttp2_option_del(options) }
        nghttp2_option_set_no_closed_streams(options, 1)
        var session: OpaquePointer?
        nghttp2_session_server_new2(&session, callbacks, Unmanaged.passUnretained(self).toOpaque(), options)
        self.session = session
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(clamping: settings.initialMaxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(clamping: settings.maxHeaderListSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES.rawValue), value: 1),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        flush()
    }

    private func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
              frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST, let session else { return 0 }
        let request = idle.popLast() ?? newRequestObject()
        request.streamID = frame.pointee.hd.stream_id
        openStreams += 1
        receivingHeaders = request
        nghttp2_session_set_stream_user_data(session, request.streamID, Unmanaged.passUnretained(request).toOpaque())
        return 0
    }

    /// At most one object per concurrent stream is ever created; they are reused for later streams.
    private func newRequestObject() -> HTTP2ServerRequest {
        let request = HTTP2ServerRequest()
        requestObjects.append(request)
        return request
    }

    private func request(_ streamID: Int32) -> HTTP2ServerRequest? {
        guard let session, let pointer = nghttp2_session_get_stream_user_data(session, streamID) else { return nil }
        return Unmanaged<HTTP2ServerRequest>.fromOpaque(pointer).takeUnretainedValue()
    }

    private func header(_ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Int32 {
        let streamID = frame.pointee.hd.stream_id
        let request: HTTP2ServerRequest
        if let current = receivingHeaders, current.streamID == streamID {
            request = current
        } else if let found = self.request(streamID) {
            request = found
        } else {
            return 0
        }
        if request.headers.byteCount + name.count + value.count > settings.maxHeaderListSize {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        request.headers.storage.append(name: name, value: value)
        return 0
    }

    private func dataChunk(_ streamID: Int32, _ data: UnsafeRawBufferPointer) -> Int32 {
        request(streamID)?.appendBody(data, limit: settings.maxBufferedBodyBytes)
        return 0
    }

    private func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let type = frame.pointee.hd.type
        if type == UInt8(NGHTTP2_GOAWAY.rawValue) {
            delegate?.connectionDidReceiveGoaway(self)
            return 0
        }
        guard type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue),
              frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
              let request = request(frame.pointee.hd.stream_id) else { return 0 }
        if let last = goawayLastStreamID, request.streamID > last { return 0 }
        delegate?.connection(self, didReceive: request)
        return 0
    }

    private func streamClosed(_ streamID: Int32) -> Int32 {
        guard let request = request(streamID) else { return 0 }
        if receivingHeaders === request { receivingHeaders = nil }
        request.reset()
        idle.append(request)
        openStreams -= 1
        return 0
    }
}

extension HTTP2ServerConnection: TLSStreamDelegate {
    public func streamDidConnect(_ stream: TLSStream) {
        startSession()
    }

    public func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) {
        guard let session, !closed else { return }
        let n = nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        if n < 0 {
            // A fatal input error (bad preface, flooding): end the session with GOAWAY.
            _ = nghttp2_session_terminate_session(session, NGHTTP2_PROTOCOL_ERROR.rawValue)
        }
        scheduleFlush()
    }

    public func streamDidDrain(_ stream: TLSStream) {
        flush()
    }

    public func stream(_ stream: TLSStream, didCloseWith error: TransportError) {
        guard !closed else { return }
        closed = true
        flushTimer?.cancel()
        loop.execute { [self] in
            receivingHeaders = nil
            requestObjects.removeAll()
            idle.removeAll()
            delegate?.connectionDidClose(self, error: error)
        }
    }
}

/// Calls `body` with the connection behind an nghttp2 user-data pointer without retaining it:
/// the session never outlives its connection, and a retain per header field is measurable.
private func withConnection(_ context: UnsafeMutableRawPointer?, _ body: (HTTP2ServerConnection) -> Int32) -> Int32 {
    Unmanaged<HTTP2ServerConnection>.fromOpaque(context!)._withUnsafeGuaranteedRef(body)
}
