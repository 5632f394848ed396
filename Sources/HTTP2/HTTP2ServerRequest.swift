/// The header fields of one received request, in arrival order, duplicates included.
///
/// A view of storage that belongs to the request object and is reused from request to
/// request, so receiving a request allocates nothing once the connection is warm; it is valid
/// only while the request is being handled. Values become Swift strings only when asked for;
/// hot checks compare bytes (``nameEquals(at:_:)``, ``valueBytes(at:)``).
public struct HTTP2HeaderBlock {
    let storage: HTTP2HeaderStorage

    /// Number of fields, pseudo-headers included.
    public var count: Int { storage.fieldCount }

    /// Total size of names and values in bytes.
    public var byteCount: Int { storage.byteCount }

    /// The name of field `index` (lowercase, as HTTP/2 requires).
    public func name(at index: Int) -> String {
        let f = storage.field(index)
        return String(decoding: UnsafeBufferPointer(start: storage.bytes + f.nameStart, count: f.nameLength), as: UTF8.self)
    }

    /// The value of field `index`.
    public func value(at index: Int) -> String {
        String(decoding: valueBytes(at: index), as: UTF8.self)
    }

    /// The length of the name of field `index` in bytes (a cheap first test before comparing names).
    public func nameLength(at index: Int) -> Int { storage.field(index).nameLength }

    /// The length of the value of field `index` in bytes.
    public func valueLength(at index: Int) -> Int { storage.field(index).valueLength }

    /// The raw bytes of the value of field `index`, without copying; valid as long as the block.
    public func valueBytes(at index: Int) -> UnsafeRawBufferPointer {
        let f = storage.field(index)
        return UnsafeRawBufferPointer(start: storage.bytes + f.valueStart, count: f.valueLength)
    }

    /// True when field `index` is named `name` (compared as bytes, no allocation).
    public func nameEquals(at index: Int, _ name: StaticString) -> Bool {
        let f = storage.field(index)
        return f.nameLength == name.utf8CodeUnitCount && memcmp(storage.bytes + f.nameStart, name.utf8Start, f.nameLength) == 0
    }

    /// The index of the first field named `name`.
    public func firstIndex(of name: StaticString) -> Int? {
        for i in 0..<count where nameEquals(at: i, name) { return i }
        return nil
    }

    /// The value of the first field named `name`.
    public func value(_ name: StaticString) -> String? {
        firstIndex(of: name).map { value(at: $0) }
    }

    /// Every field as a name/value pair, in arrival order (for logs and recordings).
    public var all: [HTTP2Header] {
        (0..<count).map { HTTP2Header(name(at: $0), value(at: $0)) }
    }
}

/// Header bytes and field offsets in memory managed by hand. Loop-confined, like its request.
///
/// Appending is a plain copy into buffers that only grow. Swift arrays here cost a
/// uniqueness check, a capacity check and a dynamic exclusivity check per field, measured at
/// about a tenth of the mock's instructions per request.
final class HTTP2HeaderStorage {
    struct Field {
        var nameStart: Int
        var nameLength: Int
        var valueStart: Int
        var valueLength: Int
    }

    private(set) var bytes: UnsafeMutablePointer<UInt8>
    private var byteCapacity = 1024
    private(set) var byteCount = 0
    private var fields: UnsafeMutablePointer<Field>
    private var fieldCapacity = 16
    private(set) var fieldCount = 0

    init() {
        bytes = .allocate(capacity: byteCapacity)
        fields = .allocate(capacity: fieldCapacity)
    }

    deinit {
        bytes.deallocate()
        fields.deallocate()
    }

    func field(_ index: Int) -> Field {
        precondition(index >= 0 && index < fieldCount, "header field index out of range")
        return fields[index]
    }

    func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let needed = byteCount + name.count + value.count
        if needed > byteCapacity { growBytes(to: needed) }
        if fieldCount == fieldCapacity { growFields() }
        let nameStart = byteCount
        let valueStart = nameStart + name.count
        if name.count > 0 { memcpy(bytes + nameStart, name.baseAddress!, name.count) }
        if value.count > 0 { memcpy(bytes + valueStart, value.baseAddress!, value.count) }
        byteCount = needed
        fields[fieldCount] = Field(nameStart: nameStart, nameLength: name.count, valueStart: valueStart, valueLength: value.count)
        fieldCount += 1
    }

    func removeAll() {
        byteCount = 0
        fieldCount = 0
    }

    private func growBytes(to minimum: Int) {
        let capacity = max(minimum, byteCapacity * 2)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.update(from: bytes, count: byteCount)
        bytes.deallocate()
        bytes = grown
        byteCapacity = capacity
    }

    private func growFields() {
        let capacity = fieldCapacity * 2
        let grown = UnsafeMutablePointer<Field>.allocate(capacity: capacity)
        grown.update(from: fields, count: fieldCount)
        fields.deallocate()
        fields = grown
        fieldCapacity = capacity
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
    public let headers = HTTP2HeaderBlock(storage: HTTP2HeaderStorage())
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
        headers.storage.removeAll()
        body.removeAll(keepingCapacity: true)
        bodyLength = 0
        responseBody = []
        responseOffset = 0
    }
}

#if canImport(Glibc)
import Glibc
#endif
