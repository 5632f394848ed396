/// A route's path pattern (`/v1/channels/{id}/events`) and its matching, apart from the
/// router's generic parameter.
///
/// Matching a path against the route table is part of every request (twice: once for
/// admission, once to dispatch). Code of a generic type that another module calls is not
/// specialized for it, so types nested in ``HTTPRouter`` had their metadata looked up at run
/// time for every array and closure of the match: a quarter of the ingest loop's time with 500
/// matches broadcasting. These types are not generic, so the match is plain code.
struct RoutePattern: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    let segments: [Segment]
    /// 1 for a literal segment, 0 for a parameter: the larger mask (compared in order) is the
    /// more specific pattern.
    let literalMask: [Int]

    init(_ pattern: String) {
        segments = RoutePattern.pathSegments(pattern).map { segment -> Segment in
            if segment.hasPrefix("{") && segment.hasSuffix("}") { return .parameter(String(segment.dropFirst().dropLast())) }
            return .literal(String(segment))
        }
        literalMask = segments.map { if case .literal = $0 { 1 } else { 0 } }
    }

    /// The parameters of `path` (split by ``pathSegments(_:)``) under this pattern; nil when it
    /// does not match: another segment count, a literal that differs, or a parameter that is
    /// empty or invalidly percent-encoded. Literals are compared before any parameter is decoded.
    func match(_ path: [Substring]) -> HTTPRouteParameters? {
        guard segments.count == path.count else { return nil }
        for (expected, actual) in zip(segments, path) {
            if case .literal(let literal) = expected, actual != literal { return nil }
        }
        var parameters = HTTPRouteParameters()
        for (expected, actual) in zip(segments, path) {
            guard case .parameter(let name) = expected else { continue }
            guard !actual.isEmpty, let value = HTTPRequestTarget.percentDecoded(actual.utf8) else { return nil }
            parameters.values.append((name, value))
        }
        return parameters
    }

    /// Splits a path on `/`, ignoring a trailing slash (`/v1/channels/` is `/v1/channels`) and
    /// what comes before the first slash. On the path's bytes (the generic `split` of a
    /// `String` walks it by `Character`, a sixth of the route match's time).
    static func pathSegments(_ path: String) -> [Substring] {
        let bytes = path.utf8
        var segments: [Substring] = []
        var segmentStart: String.Index?
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index] == UInt8(ascii: "/") {
                if let start = segmentStart { segments.append(Substring(bytes[start..<index])) }
                segmentStart = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
        if let start = segmentStart { segments.append(Substring(bytes[start...])) }
        while segments.last?.isEmpty == true { segments.removeLast() }
        return segments
    }
}
