/// Bounds on a Live Activity content-state, and on each patch and value that goes into one.
///
/// They keep two promises. What is accepted is deliverable: the push wraps the state two levels
/// deeper (`{"aps":{"content-state": ...}}`) and APNs-style parsers refuse JSON nested deeper
/// than 64 levels, so a state at the parser's own limit would make a push nobody takes. And the
/// work per request is bounded whatever the state holds: a merge patch or a check walks at most
/// ``maximumValues`` values, however large the body.
///
/// A content-state must also fit the 4 KB push (checked by the engine on the encoded payload),
/// which no state near these bounds does; they are far above what an app's `ContentState`
/// decodes and far below what could hold the ingest loop.
public enum ContentStateLimits {
    /// Levels of objects and arrays inside the content-state (the state object itself is 1).
    public static let maximumDepth = 16
    /// Members and array elements in all, at every level. A 4 KB push holds a few hundred at most.
    public static let maximumValues = 1_000

    /// Why a value is outside the limits; `description` is a predicate ("is nested ...").
    public struct Violation: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Checks `value` against both limits, stopping at the first value past either: linear in
    /// the values visited, never more than ``maximumValues`` + 1 of them.
    public static func check(_ value: JSONValue) throws(Violation) {
        var counted = 0
        try visit(value, depth: 0, counted: &counted)
    }

    private static func visit(_ value: JSONValue, depth: Int, counted: inout Int) throws(Violation) {
        let children: Int
        switch value {
        case .object(let members): children = members.count
        case .array(let elements): children = elements.count
        default: return
        }
        guard depth < maximumDepth else {
            throw Violation(description: "is nested deeper than \(maximumDepth) levels of objects and arrays")
        }
        counted += children
        guard counted <= maximumValues else {
            throw Violation(description: "holds more than \(maximumValues) members and array elements in all")
        }
        switch value {
        case .object(let members): for member in members { try visit(member.value, depth: depth + 1, counted: &counted) }
        case .array(let elements): for element in elements { try visit(element, depth: depth + 1, counted: &counted) }
        default: break
        }
    }
}
