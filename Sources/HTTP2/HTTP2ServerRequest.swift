/// The header fields of one received request, in arrival order, duplicates included.
///
/// Names and values are kept as bytes in one buffer that is reused from request to request, so
/// receiving a request allocates nothing once the connection is warm. Values become Swift
/// strings only when asked for; hot checks can compare bytes with ``valueBytes(at:)``.
public struct HTTP2HeaderBlock {
    private struct Field {
        var nameStart: Int
        var nameLength: Int
        var valueStart: Int
        var valueLength: Int
    }

    private var bytes: [UInt8] = []
    private var fields: [Field] = []

    init() {
        bytes.reserveCapacity(1024)
        fields.reserveCapacity(16)
    }

    /// Number of fields, pseudo-headers included.
    public var count: Int { fields.count }

    /// Total size of names and values in bytes.
    public var byteCount: Int { bytes.count }

    mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        fields.append(Field(nameStart: nameStart, nameLength: name.count, valueStart: valueStart, valueLength: value.count))
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// The name of field `index` (lowercase, as HTTP/2 requires).
    public func name(at index: Int) -> String {
        let f = fields[index]
        return String(decoding: bytes[f.nameStart..<f.nameStart + f.nameLength], as: UTF8.self)
    }

    /// The value of field `index`.
    public func value(at index: Int) -> String {
        let f = fields[index]
        return String(decoding: bytes[f.valueStart..<f.valueStart + f.valueLength], as: UTF8.self)
    }

    /// The length of the name of field `index` in bytes (a cheap first test before comparing names).
    public func nameLength(at index: Int) -> Int { fields[index].nameLength }

    /// The length of the value of field `index` in bytes.
    public func valueLength(at index: Int) -> Int { fields[index].valueLength }

    /// The raw bytes of the value of field `index`, without copying.
    public func valueBytes(at index: Int) -> ArraySlice<UInt8> {
        let f = fields[index]
        return bytes[f.valueStart..<f.valueStart + f.valueLength]
    }

    /// True when field `index` is named `name` (compared as bytes, no allocation).
    public func nameEquals(at index: Int, _ name: StaticString) -> Bool {
        let f = fields[index]
        guard f.nameLength == name.utf8CodeUnitCount else { return false }
        return bytes.withUnsafeBytes { raw in
            memcmp(raw.baseAddress! + f.nameStart, name.utf8Start, f.nameLength) == 0
        }
    }

    /// The index of the first field named `name`.
    public func firstIndex(of name: StaticString) -> Int? {
        for i in 0..<fields.count where nameEquals(at: i, name) { return i }
        return nil
    }

    /// The value of the first field named `name`.
    public func value(_ name: StaticString) -> String? {
        firstIndex(of: name).map { value(at: $0) }
    }

    /// Every field as a name/value pair, in arrival order (for logs and recordings).
    public var all: [HTTP2Header] {
        (0..<fields.count).map { HTTP2Header(name(at: $0), value(at: $0)) }
    }
}

/// A request received by an ``HTTP2ServerConnection``, complete with its body. Loop-confined.
///
/// The object is recycled when its stream closes: read what you need while handling it and
/// answer through ``HTTP2ServerConnection/respond(to:status:headers:body:)`` by stream id.
public final class HTTP2ServerRequest: @unchecked Sendable {
    /// The HTTP/2 stream the request arrived on.
    public internal(set) var streamID: Int32 = 0
    /// All header fields, pseudo-headers (`:method`, `:path`, ...) first as HTTP/2 requires.
    public internal(set) var headers = HTTP2HeaderBlock()
    /// The body bytes, up to the connection's buffering limit.
    public internal(set) var body: [UInt8] = []
    /// The full body length as received, which exceeds `body.count` when the limit cut it.
    public internal(set) var bodyLength = 0

    /// The response body being sent, read by nghttp2 through the data provider.
    var responseBody: [UInt8] = []
    var responseOffset = 0

    init() {}

    /// `:method`, e.g. "POST".
    public var method: String? { headers.value(":method") }
    /// `:path`, e.g. "/3/device/abcd".
    public var path: String? { headers.value(":path") }
    /// True when the body was longer than the connection buffers.
    public var bodyTruncated: Bool { bodyLength > body.count }

    func appendBody(_ chunk: UnsafeRawBufferPointer, limit: Int) {
        bodyLength += chunk.count
        let room = limit - body.count
        if room > 0 { body.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk.prefix(room))) }
    }

    func reset() {
        streamID = 0
        headers.removeAll()
        body.removeAll(keepingCapacity: true)
        bodyLength = 0
        responseBody = []
        responseOffset = 0
    }
}

#if canImport(Glibc)
import Glibc
#endif
