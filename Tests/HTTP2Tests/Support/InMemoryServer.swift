import CNGHTTP2
import Foundation

/// The server end of an in-memory HTTP/2 connection: an nghttp2 server session fed and drained
/// by the test (``receive(_:)``, ``takeOutput()``), which answers, refuses, resets and sends
/// GOAWAY only when told to, and records what the client did on the wire.
///
/// Synchronous and confined to the test's thread.
final class InMemoryServer {
    /// A request whose END_STREAM has arrived.
    struct Request {
        var streamID: Int32
        var method = ""
        var path = ""
        /// Non-pseudo headers with whether the client sent them as HPACK "never indexed".
        var headers: [(name: String, value: String, neverIndexed: Bool)] = []
        var body: [UInt8] = []
    }

    struct Stats {
        /// For each stream limit (once acknowledged by the client), the most streams open at once under it.
        var peakOpenByLimit: [UInt32: Int] = [:]
        /// Streams the client opened beyond the limit it had acknowledged.
        var limitViolations = 0
        /// Frames nghttp2 rejected (a misbehaving client).
        var invalidFrames = 0
        var pingsReceived = 0
        var goawaysReceived = 0
        /// RST_STREAM frames from the client, by error code.
        var resetsReceived: [UInt32: Int] = [:]
        var requestsReceived = 0
    }

    private(set) var stats = Stats()
    /// Complete requests not yet answered, refused or reset, oldest first.
    private(set) var waiting: [Request] = []
    private var session: OpaquePointer!
    private var partial: [Int32: Request] = [:]
    private var open = 0
    private var unacknowledgedLimits: [UInt32] = []
    private var acknowledgedLimit: UInt32
    private var responseBodies: [Int32: (bytes: [UInt8], offset: Int)] = [:]

    init(maxConcurrentStreams: UInt32, answerPings: Bool = true) {
        acknowledgedLimit = maxConcurrentStreams
        session = makeSession(answerPings: answerPings)
        setMaxConcurrentStreams(maxConcurrentStreams)
    }

    deinit { nghttp2_session_del(session) }

    /// Feeds bytes from the client; returns false when nghttp2 rejected them.
    @discardableResult
    func receive(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) } >= 0
    }

    /// What the server has to send.
    func takeOutput() -> [UInt8] {
        var output: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            guard length > 0, let data else { break }
            output.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        }
        return output
    }

    /// Answers `streamID` with `status`, echoing the request body (or a greeting for a GET).
    func respond(to streamID: Int32, status: Int = 200) {
        let request = take(streamID)
        responseBodies[streamID] = (request.method == "GET" ? Array(TestPKI.helloBody.utf8) : request.body, 0)
        var fields = [(":status", "\(status)"), ("x-request-path", request.path), ("x-request-method", request.method),
                      ("x-never-indexed", request.headers.filter(\.neverIndexed).map(\.name).joined(separator: ","))]
        fields += request.headers.map { ("x-echo-\($0.name)", $0.value) }
        withHeaderList(fields) { list, count in
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { _, streamID, buffer, length, flags, _, user in
                Unmanaged<InMemoryServer>.fromOpaque(user!).takeUnretainedValue().readBody(streamID, into: buffer!, length, flags!)
            })
            _ = nghttp2_submit_response(session, streamID, list, count, &provider)
        }
    }

    /// Answers every waiting request.
    func respondToAll() {
        for request in waiting { respond(to: request.streamID) }
    }

    func reset(_ streamID: Int32, code: UInt32) {
        _ = take(streamID)
        nghttp2_submit_rst_stream(session, 0, streamID, code)
    }

    /// The flow-control window each new stream of the client starts with (0: the client may
    /// send a request's HEADERS but none of its body until it is raised).
    func setInitialWindowSize(_ size: UInt32) {
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: size)
        nghttp2_submit_settings(session, 0, &entry, 1)
    }

    func setMaxConcurrentStreams(_ limit: UInt32) {
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: limit)
        nghttp2_submit_settings(session, 0, &entry, 1)
        unacknowledgedLimits.append(limit)
    }

    func sendGoaway(lastStreamID: Int32, errorCode: UInt32 = 0, debugData: String = #"{"reason":"Shutdown"}"#) {
        var debug = Array(debugData.utf8)
        nghttp2_submit_goaway(session, 0, lastStreamID, errorCode, &debug, debug.count)
    }

    private func take(_ streamID: Int32) -> Request {
        let index = waiting.firstIndex { $0.streamID == streamID }!
        return waiting.remove(at: index)
    }

    private func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, _ length: Int,
                          _ flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard var body = responseBodies[streamID] else { return 0 }
        let count = min(length, body.bytes.count - body.offset)
        body.bytes.withUnsafeBufferPointer { if count > 0 { buffer.update(from: $0.baseAddress! + body.offset, count: count) } }
        body.offset += count
        responseBodies[streamID] = body
        if body.offset == body.bytes.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            responseBodies[streamID] = nil
        }
        return count
    }

    // MARK: nghttp2 events

    private func beginRequest(_ streamID: Int32) {
        open += 1
        if open > Int(acknowledgedLimit) { stats.limitViolations += 1 }
        stats.peakOpenByLimit[acknowledgedLimit] = max(stats.peakOpenByLimit[acknowledgedLimit] ?? 0, open)
        partial[streamID] = Request(streamID: streamID)
    }

    private func header(_ streamID: Int32, _ name: String, _ value: String, neverIndexed: Bool) {
        switch name {
        case ":path": partial[streamID]?.path = value
        case ":method": partial[streamID]?.method = value
        default: if !name.hasPrefix(":") { partial[streamID]?.headers.append((name, value, neverIndexed)) }
        }
    }

    private func frameReceived(_ frame: nghttp2_frame) {
        let isAck = frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
        let endsStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_SETTINGS.rawValue where isAck:
            if !unacknowledgedLimits.isEmpty { acknowledgedLimit = unacknowledgedLimits.removeFirst() }
        case NGHTTP2_PING.rawValue where !isAck:
            stats.pingsReceived += 1
        case NGHTTP2_GOAWAY.rawValue:
            stats.goawaysReceived += 1
        case NGHTTP2_RST_STREAM.rawValue:
            stats.resetsReceived[frame.rst_stream.error_code, default: 0] += 1
            partial[frame.hd.stream_id] = nil
            waiting.removeAll { $0.streamID == frame.hd.stream_id }
        case NGHTTP2_HEADERS.rawValue where endsStream, NGHTTP2_DATA.rawValue where endsStream:
            guard let request = partial.removeValue(forKey: frame.hd.stream_id) else { return }
            stats.requestsReceived += 1
            waiting.append(request)
        default:
            break
        }
    }

    private func makeSession(answerPings: Bool) -> OpaquePointer {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            if frame!.pointee.headers.cat == NGHTTP2_HCAT_REQUEST { server(user).beginRequest(frame!.pointee.hd.stream_id) }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, flags, user in
            server(user).header(frame!.pointee.hd.stream_id, String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                                String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self),
                                neverIndexed: flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
            server(user).partial[streamID]?.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            server(user).frameReceived(frame!.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { _, _, _, user in
            server(user).stats.invalidFrames += 1
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, _, _, user in
            server(user).open -= 1
            return 0
        }
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_ping_ack(option, answerPings ? 0 : 1)
        var session: OpaquePointer?
        nghttp2_session_server_new2(&session, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        return session!
    }
}

private func server(_ user: UnsafeMutableRawPointer?) -> InMemoryServer {
    Unmanaged<InMemoryServer>.fromOpaque(user!).takeUnretainedValue()
}
