/// A response's headers as they came off the wire: every name and value in one byte buffer, a
/// string made only for a header that is asked for.
///
/// An APNs answer carries two 36-character ids, and most callers (a kickoff's push-to-start
/// answers) read neither: made into strings on arrival, they cost two allocations and an array
/// per answer. Each header is stored as its name's and its value's lengths (four bytes each,
/// little-endian), then the name, then the value.
public struct HTTP2ResponseHeaders: Sendable, Equatable {
    private var bytes: [UInt8] = []

    public init() {}

    public init(_ headers: [HTTP2Header]) {
        for header in headers {
            var name = header.name, value = header.value
            name.withUTF8 { name in value.withUTF8 { value in append(name: name, value: value) } }
        }
    }

    public var isEmpty: Bool { bytes.isEmpty }

    /// Adds a header as received (the name lowercase, as HTTP/2 sends it).
    public mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if bytes.isEmpty { bytes.reserveCapacity(128) }
        Self.appendLength(name.count, to: &bytes)
        Self.appendLength(value.count, to: &bytes)
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: value)
    }

    /// The value of the first header named `name` (lowercase).
    public func value(of name: String) -> String? {
        var name = name
        return name.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { stored -> String? in
                var found: String?
                visit(stored) { headerName, value in
                    guard headerName.elementsEqual(wanted) else { return true }
                    found = String(decoding: value, as: UTF8.self)
                    return false
                }
                return found
            }
        }
    }

    /// Every header, in the order received.
    public var all: [HTTP2Header] {
        bytes.withUnsafeBufferPointer { stored in
            var headers: [HTTP2Header] = []
            visit(stored) { name, value in
                headers.append(HTTP2Header(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
                return true
            }
            return headers
        }
    }

    /// Calls `body` with each header's name and value while it returns true.
    private func visit(_ stored: UnsafeBufferPointer<UInt8>,
                       _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        var offset = 0
        while offset < stored.count {
            let nameCount = Self.length(in: stored, at: offset), valueCount = Self.length(in: stored, at: offset + 4)
            let nameStart = offset + 8, valueStart = nameStart + nameCount
            offset = valueStart + valueCount
            guard body(UnsafeBufferPointer(rebasing: stored[nameStart..<valueStart]),
                       UnsafeBufferPointer(rebasing: stored[valueStart..<offset])) else { return }
        }
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        let length = UInt32(length)
        bytes.append(UInt8(truncatingIfNeeded: length))
        bytes.append(UInt8(truncatingIfNeeded: length >> 8))
        bytes.append(UInt8(truncatingIfNeeded: length >> 16))
        bytes.append(UInt8(truncatingIfNeeded: length >> 24))
    }

    private static func length(in bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int {
        Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
    }
}
