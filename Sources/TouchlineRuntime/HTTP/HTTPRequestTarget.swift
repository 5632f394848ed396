/// A request target (`/v1/channels/abc?limit=10`) split into its path and decoded query items.
///
/// Parsed by hand over UTF-8 bytes rather than with Foundation's URL types: this runs once per
/// request on the server loop, and the gateway takes small requests at a high rate.
public struct HTTPRequestTarget: Sendable, Equatable {
    /// One `name=value` pair of the query, both percent-decoded (`+` read as a space).
    public struct QueryItem: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The path as sent, still percent-encoded, so that an encoded `/` inside a segment cannot
    /// split it; the router decodes each parameter on its own.
    public var path: String
    /// Query items in the order sent; an item without `=` has an empty value. Items whose
    /// encoding is invalid are kept with their raw text.
    public var query: [QueryItem]

    public init(parsing target: String) {
        var utf8 = target.utf8[...]
        if let hash = utf8.firstIndex(of: UInt8(ascii: "#")) { utf8 = utf8[..<hash] }
        guard let mark = utf8.firstIndex(of: UInt8(ascii: "?")) else {
            path = String(Substring(utf8))
            query = []
            return
        }
        path = String(Substring(utf8[..<mark]))
        query = utf8[utf8.index(after: mark)...]
            .split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true)
            .map { pair in
                let equals = pair.firstIndex(of: UInt8(ascii: "="))
                let name = equals.map { pair[..<$0] } ?? pair
                let value = equals.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
                return QueryItem(name: Self.decodeQueryComponent(name), value: Self.decodeQueryComponent(value))
            }
    }

    /// The first value given for `name`, if any.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// Decodes `%XX` escapes; nil when an escape is malformed or the result is not UTF-8.
    public static func percentDecoded<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool = false) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            bytes.formIndex(after: &index)
            switch byte {
            case UInt8(ascii: "%"):
                guard index != bytes.endIndex, let high = hexValue(bytes[index]) else { return nil }
                bytes.formIndex(after: &index)
                guard index != bytes.endIndex, let low = hexValue(bytes[index]) else { return nil }
                bytes.formIndex(after: &index)
                out.append(high << 4 | low)
            case UInt8(ascii: "+") where plusAsSpace:
                out.append(UInt8(ascii: " "))
            default:
                out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func decodeQueryComponent(_ bytes: Substring.UTF8View.SubSequence) -> String {
        percentDecoded(bytes, plusAsSpace: true) ?? String(Substring(bytes))
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
