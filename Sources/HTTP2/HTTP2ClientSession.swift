import CNGHTTP2
import Foundation

/// The stream-level flow-control window advertised to the server: large, so that responses are
/// never held back by flow control (nghttp2 sends WINDOW_UPDATE as data is consumed).
private let streamWindowSize: Int32 = 16 << 20
/// The connection-level window.
private let connectionWindowSize: Int32 = 256 << 20

/// A GOAWAY frame as received: streams above `lastStreamID` were not processed by the server.
struct ReceivedGoaway {
    var lastStreamID: Int32
    var errorCode: UInt32
    /// The `reason` of a JSON debug payload (`{"reason": "..."}`, as APNs sends), else the
    /// payload as text, nil when empty.
    var reason: String?

    static func reason(fromDebugData data: UnsafeBufferPointer<UInt8>) -> String? {
        guard !data.isEmpty else { return nil }
        struct Payload: Decodable { var reason: String }
        if let payload = try? JSONDecoder().decode(Payload.self, from: Data(data)) { return payload.reason }
        return String(decoding: data, as: UTF8.self)
    }
}

extension HTTP2ClientConnection {
    /// Creates the nghttp2 client session and queues the client SETTINGS (no server push, large
    /// windows); nghttp2 sends the connection preface before them on the first flush.
    func makeClientSession() -> OpaquePointer {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, context in
            withConnection(context) { $0.didReceive(frame!) }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { session, frame, name, nameLength, value, valueLength, _, _ in
            guard frame!.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            withStreamRequest(session, frame!.pointee.hd.stream_id) {
                $0.receiveHeader(name: UnsafeBufferPointer(start: name, count: nameLength),
                                 value: UnsafeBufferPointer(start: value, count: valueLength))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, streamID, data, length, _ in
            withStreamRequest(session, streamID) { $0.responseBody.append(contentsOf: UnsafeBufferPointer(start: data, count: length)) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { session, frame, _ in
            if frame!.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) {
                withStreamRequest(session, frame!.pointee.hd.stream_id) { $0.headersSent = true }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { session, streamID, errorCode, context in
            withStreamRequest(session, streamID) { request in
                withConnection(context) { $0.streamDidClose(request, errorCode: errorCode) }
            }
            return 0
        }

        nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, context in
            withConnection(context) { $0.sessionError = String(decoding: UnsafeRawBufferPointer(start: message, count: length), as: UTF8.self) }
            return 0
        }

        var session: OpaquePointer?
        let result = nghttp2_session_client_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque())
        guard result == 0, let session else { fatalError("nghttp2_session_client_new failed: \(result)") }
        let settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(streamWindowSize)),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, connectionWindowSize)
        return session
    }

    /// A frame arrived (called inside `nghttp2_session_mem_recv`: record only; ``afterSessionCall()``
    /// feeds it to the state machine once nghttp2 has returned).
    fileprivate func didReceive(_ frame: UnsafePointer<nghttp2_frame>) {
        let header = frame.pointee.hd
        let isAck = header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
        switch UInt32(header.type) {
        case NGHTTP2_SETTINGS.rawValue where !isAck:
            // nghttp2 has applied the frame's values by now: this is the limit in force.
            receivedMaxConcurrentStreams = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        case NGHTTP2_GOAWAY.rawValue:
            let frame = frame.pointee.goaway
            receivedGoaway = ReceivedGoaway(lastStreamID: frame.last_stream_id, errorCode: frame.error_code,
                                            reason: ReceivedGoaway.reason(fromDebugData: UnsafeBufferPointer(start: frame.opaque_data, count: frame.opaque_data_len)))
        case NGHTTP2_PING.rawValue where isAck:
            receivedPingAck = true
        default:
            break
        }
    }

    /// nghttp2 closed a stream; the request is resolved once the session call has returned.
    fileprivate func streamDidClose(_ request: HTTP2PendingRequest, errorCode: UInt32) {
        request.closeErrorCode = errorCode
        closedStreams.append(request)
        removeFromInFlight(request)
    }
}

extension HTTP2PendingRequest {
    fileprivate func receiveHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if name.first == UInt8(ascii: ":") {
            if name.elementsEqual(":status".utf8) { status = parseStatus(value) }
            return
        }
        responseHeaders.append(name: name, value: value)
    }

    private func parseStatus(_ digits: UnsafeBufferPointer<UInt8>) -> Int {
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return 0 }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }

    /// Copies the next part of the body into nghttp2's frame buffer. A request is acted on once
    /// its body's end arrives, which may leave well after its HEADERS (the server's flow-control
    /// window closed meanwhile): a fence that stopped holding since resets the stream instead,
    /// so the server never has the whole request.
    fileprivate func readBody(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        if let fence = request.fence, !fence.holds {
            withheld = true
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let count = request.body.withUnsafeBufferPointer { body -> Int in
            let count = min(capacity, body.count - bodyOffset)
            if count > 0 { buffer.update(from: body.baseAddress! + bodyOffset, count: count) }
            return count
        }
        bodyOffset += count
        if bodyOffset == request.body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}

/// The data provider's read callback: the stream's request supplies its own body.
let readRequestBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
    Unmanaged<HTTP2PendingRequest>.fromOpaque(source!.pointee.ptr)._withUnsafeGuaranteedRef {
        $0.readBody(into: buffer!, capacity: length, flags: flags!)
    }
}

// The callbacks borrow the connection and the requests without retaining them: the connection
// outlives its session, and the in-flight list keeps each request alive until its stream closes.
// (Retaining per callback measured a few percent of the client's CPU.)

private func withConnection(_ context: UnsafeMutableRawPointer?, _ body: (HTTP2ClientConnection) -> Void) {
    Unmanaged<HTTP2ClientConnection>.fromOpaque(context!)._withUnsafeGuaranteedRef(body)
}

/// Runs `body` with the request whose stream this is (its stream user data), if any.
private func withStreamRequest(_ session: OpaquePointer?, _ streamID: Int32, _ body: (HTTP2PendingRequest) -> Void) {
    guard let pointer = nghttp2_session_get_stream_user_data(session, streamID) else { return }
    Unmanaged<HTTP2PendingRequest>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
}
