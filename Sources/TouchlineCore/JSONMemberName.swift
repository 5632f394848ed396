/// A JSON member name compared and hashed by its UTF-8 code units.
///
/// RFC 8259 §8.3 compares names code unit by code unit. Swift's `String` equality is Unicode
/// canonical equivalence instead, so `"é"` and `"e\u{301}"` (or `"K"` and the Kelvin sign
/// `"\u{212A}"`) would be one name: a body could then carry two members the parser takes for a
/// duplicate, or a member that matches a field it does not spell. Every member lookup, duplicate
/// check and set of names in the JSON handling goes through this type.
public struct JSONMemberName: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let text: String

    public init(_ text: String) { self.text = text }
    public init(stringLiteral text: String) { self.text = text }

    public var description: String { text }

    public static func == (lhs: JSONMemberName, rhs: JSONMemberName) -> Bool {
        sameCodeUnits(lhs.text, rhs.text)
    }

    /// True when both strings hold the same UTF-8 bytes: compared as contiguous buffers (a
    /// generic `elementsEqual` over the UTF-8 views was measurable on the ingest path).
    @inlinable
    public static func sameCodeUnits(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        var lhs = lhs, rhs = rhs
        return lhs.withUTF8 { left in rhs.withUTF8 { right in left.elementsEqual(right) } }
    }

    public func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
    }
}

extension JSONValue.Member {
    /// True when this member is named `name`, compared by code units (see ``JSONMemberName``).
    public func isNamed(_ name: String) -> Bool { JSONMemberName.sameCodeUnits(self.name, name) }
}

extension Set<JSONMemberName> {
    /// True when `name` is in the set, compared by code units.
    public func contains(name: String) -> Bool { contains(JSONMemberName(name)) }
}
