/// The patterns of a router's routes, each at its route's index, found by the number of segments
/// a path has: a path is compared only with the patterns of its own length (a pattern of another
/// length never matches it), on every request, twice (admission, dispatch).
struct RoutePatternTable: Sendable {
    private var patterns: [RoutePattern] = []
    /// The indices of the patterns of each segment count, in the order added.
    private var bySegmentCount: [Int: [Int]] = [:]

    mutating func append(_ pattern: RoutePattern) {
        bySegmentCount[pattern.segments.count, default: []].append(patterns.count)
        patterns.append(pattern)
    }

    /// The patterns that own `path`, by index, with their parameters: of those that match it,
    /// only the most literal (the largest ``RoutePattern/literalMask``) own it.
    func owners(of path: String) -> [(index: Int, parameters: HTTPRouteParameters)] {
        let segments = RoutePattern.pathSegments(path)
        var owners: [(index: Int, parameters: HTTPRouteParameters)] = []
        var ownerMask: [Int] = []
        for index in bySegmentCount[segments.count] ?? [] {
            let pattern = patterns[index]
            guard let parameters = pattern.match(segments) else { continue }
            if owners.isEmpty || ownerMask.lexicographicallyPrecedes(pattern.literalMask) {
                owners = [(index, parameters)]
                ownerMask = pattern.literalMask
            } else if pattern.literalMask == ownerMask {
                owners.append((index, parameters))
            }
        }
        return owners
    }
}
