import CNGHTTP2
import Foundation
import TouchlineCore
import TouchlineRuntime

/// A small HTTP/2 server over real TLS, on nghttp2's server session, for the pool tests'
/// behaviours `nghttpd` cannot produce on demand: GOAWAY after N requests, REFUSED_STREAM,
/// delayed answers. It answers every request with 200 and the request body (or a greeting for
/// GET), and counts what it saw. (A single connection's protocol behaviour is tested in memory,
/// against `InMemoryServer`.)
///
/// Runs on its own loop; ``stats()`` and ``stop()`` may be called from any thread.
final class TestHTTP2Server: @unchecked Sendable {
    struct Behaviour: Sendable {
        /// Responses are held this long (in batches) so that open streams pile up.
        var responseDelay: Duration = .zero
        /// Reset the first N requests (over all connections) with REFUSED_STREAM.
        var refuseFirst = 0
        /// Send GOAWAY with last-stream-id = the N-th request's stream on the first connection,
        /// answer the streams up to it and leave the closing to the client.
        var goawayAfter: Int?
    }

    struct Stats: Sendable {
        var connections = 0
        var requests = 0
        var requestsPerConnection: [Int] = []
        var goawaysReceived = 0
    }

    let behaviour: Behaviour
    let loop: EventLoop
    private(set) var port = 0
    private var listener: TCPListener?
    private let context: TLSContext
    fileprivate var connections: [TestServerConnection] = []
    fileprivate var statsOnLoop = Stats()
    fileprivate var refusedSoFar = 0

    init(_ behaviour: Behaviour = Behaviour()) throws {
        self.behaviour = behaviour
        context = try TestPKI.shared.serverContext()
        loop = EventLoop.start(name: "test-h2-server")
        let listener = try loop.sync { [self] in
            try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { [unowned self] fd in accept(fd) }
        }
        self.listener = listener
        port = listener.port
    }

    func stats() -> Stats {
        (try? loop.sync { [self] in statsOnLoop }) ?? Stats()
    }

    /// Closes the listener and every connection and stops the server's loop.
    func stop() {
        try? loop.sync { [self] in
            listener?.close()
            listener = nil
            for connection in connections { connection.stream?.close() }
        }
        loop.stopAndWait()
    }

    private func accept(_ fd: Int32) {
        let connection = TestServerConnection(server: self, index: statsOnLoop.connections)
        statsOnLoop.connections += 1
        statsOnLoop.requestsPerConnection.append(0)
        guard let stream = TLSStream.accept(loop: loop, context: context, socket: fd, delegate: connection) else { return }
        connection.stream = stream
        connections.append(connection)
    }

    fileprivate func connectionDidClose(_ connection: TestServerConnection) {
        connections.removeAll { $0 === connection }
    }
}

/// One request as the server sees it.
private final class TestServerStream {
    let id: Int32
    var method = ""
    var body: [UInt8] = []
    var responseBody: [UInt8] = []
    var offset = 0
    init(id: Int32) { self.id = id }
}

/// The server side of one connection. Loop-confined to the server's loop.
private final class TestServerConnection: TLSStreamDelegate {
    unowned let server: TestHTTP2Server
    let index: Int
    var stream: TLSStream?
    private var session: OpaquePointer?
    private var streams: [Int32: TestServerStream] = [:]
    private var requests = 0
    private var delayed: [TestServerStream] = []
    private var delayTimer: LoopTimer?
    private var goawayLastStreamID: Int32?
    private var behaviour: TestHTTP2Server.Behaviour { server.behaviour }

    init(server: TestHTTP2Server, index: Int) {
        self.server = server
        self.index = index
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    func streamDidConnect(_ stream: TLSStream) {
        session = makeSession()
        var limit = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: 100)
        nghttp2_submit_settings(session, 0, &limit, 1)
        flush()
    }

    func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) {
        guard let session else { return }
        _ = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        flush()
    }

    func streamDidDrain(_ stream: TLSStream) { flush() }

    func stream(_ stream: TLSStream, didCloseWith error: TransportError) {
        delayTimer?.cancel()
        server.connectionDidClose(self)
    }

    private func flush() {
        guard let session, let stream else { return }
        while true {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            guard length > 0 else { break }
            stream.write(UnsafeRawBufferPointer(start: data, count: length))
        }
    }

    // MARK: nghttp2 events

    fileprivate func beginRequest(_ id: Int32) {
        streams[id] = TestServerStream(id: id)
    }

    fileprivate func header(_ id: Int32, name: String, value: String) {
        if name == ":method" { streams[id]?.method = value }
    }

    fileprivate func data(_ id: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        streams[id]?.body.append(contentsOf: bytes)
    }

    fileprivate func frameReceived(_ frame: nghttp2_frame) {
        let endsStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_GOAWAY.rawValue:
            server.statsOnLoop.goawaysReceived += 1
        case NGHTTP2_HEADERS.rawValue where endsStream, NGHTTP2_DATA.rawValue where endsStream:
            if let request = streams[frame.hd.stream_id] { requestComplete(request) }
        default:
            break
        }
    }

    fileprivate func streamClosed(_ id: Int32) {
        streams.removeValue(forKey: id)
    }

    // MARK: Behaviour

    private func requestComplete(_ request: TestServerStream) {
        if let last = goawayLastStreamID, request.id > last { return }
        requests += 1
        server.statsOnLoop.requests += 1
        server.statsOnLoop.requestsPerConnection[index] += 1
        if server.refusedSoFar < behaviour.refuseFirst {
            server.refusedSoFar += 1
            nghttp2_submit_rst_stream(session, 0, request.id, NGHTTP2_REFUSED_STREAM.rawValue)
            return
        }
        if let goawayAfter = behaviour.goawayAfter, requests == goawayAfter, index == 0 {
            sendGoaway(lastStreamID: request.id, answering: request)
            return
        }
        if behaviour.responseDelay == .zero {
            respond(request)
        } else {
            delayed.append(request)
            if delayTimer == nil {
                delayTimer = LoopTimer(loop: server.loop) { [unowned self] in answerDelayed() }
            }
            if !delayTimer!.isScheduled { delayTimer!.schedule(after: behaviour.responseDelay) }
        }
    }

    private func answerDelayed() {
        let batch = delayed
        delayed = []
        for request in batch where goawayLastStreamID.map({ request.id <= $0 }) ?? true { respond(request) }
        flush()
    }

    /// Answers the streams up to `lastStreamID` and leaves the closing to the client.
    private func sendGoaway(lastStreamID: Int32, answering request: TestServerStream) {
        goawayLastStreamID = lastStreamID
        delayTimer?.cancel()
        answerDelayed()
        respond(request)
        var debug = Array(#"{"reason":"Shutdown"}"#.utf8)
        nghttp2_submit_goaway(session, 0, lastStreamID, 0, &debug, debug.count)
        flush()
    }

    private func respond(_ request: TestServerStream) {
        request.responseBody = request.method == "POST" ? request.body : Array(TestPKI.helloBody.utf8)
        withHeaderList([(":status", "200"), ("content-length", "\(request.responseBody.count)")]) { list, count in
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: Unmanaged.passUnretained(request).toOpaque()),
                                                 read_callback: readResponseBody)
            _ = nghttp2_submit_response(session, request.id, list, count, &provider)
        }
    }

    private func makeSession() -> OpaquePointer {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, context in
            if frame!.pointee.headers.cat == NGHTTP2_HCAT_REQUEST { serverConnection(context).beginRequest(frame!.pointee.hd.stream_id) }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, context in
            serverConnection(context).header(frame!.pointee.hd.stream_id,
                                             name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                                             value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, id, data, length, context in
            serverConnection(context).data(id, UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, context in
            serverConnection(context).frameReceived(frame!.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, id, _, context in
            serverConnection(context).streamClosed(id)
            return 0
        }
        var session: OpaquePointer?
        nghttp2_session_server_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque())
        return session!
    }
}

private func serverConnection(_ context: UnsafeMutableRawPointer?) -> TestServerConnection {
    Unmanaged<TestServerConnection>.fromOpaque(context!).takeUnretainedValue()
}

private let readResponseBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
    let request = Unmanaged<TestServerStream>.fromOpaque(source!.pointee.ptr).takeUnretainedValue()
    let count = min(length, request.responseBody.count - request.offset)
    request.responseBody.withUnsafeBufferPointer { body in
        if count > 0 { buffer!.update(from: body.baseAddress! + request.offset, count: count) }
    }
    request.offset += count
    if request.offset == request.responseBody.count { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
    return count
}

/// Calls `body` with an nghttp2 header list for `fields` (copied by nghttp2 during the call).
func withHeaderList<R>(_ fields: [(String, String)], _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
    let buffers = fields.flatMap { [Array($0.0.utf8), Array($0.1.utf8)] }.map { bytes -> UnsafeMutableBufferPointer<UInt8> in
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, bytes.count))
        _ = buffer.initialize(from: bytes)
        return buffer
    }
    defer { buffers.forEach { $0.deallocate() } }
    let list = fields.indices.map { index in
        nghttp2_nv(name: buffers[2 * index].baseAddress, value: buffers[2 * index + 1].baseAddress,
                   namelen: fields[index].0.utf8.count, valuelen: fields[index].1.utf8.count, flags: 0)
    }
    return body(list, list.count)
}
