/// Dispatches requests by method and path pattern, e.g. `POST /v1/channels/{id}/events`.
///
/// A path no route matches gets a 404 JSON error; a path that matches only under other methods
/// gets a 405 JSON error with `Allow`. A literal segment wins over a parameter: when
/// `POST /v1/tokens/batch` and `DELETE /v1/tokens/{token}` both exist, `/v1/tokens/batch` belongs
/// to the first alone (a `DELETE` there is a 405, not a delete of a token named "batch"). Parameters are percent-decoded; a parameter whose encoding
/// is invalid makes its route not match. Built once at start-up, then used on the server's loop.
public struct HTTPRouter: Sendable {
    /// The route's handler, on the server's loop, with the path parameters by name.
    public typealias Handler = @Sendable (HTTPRequest, HTTPRouteParameters) -> Void

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private struct Route: Sendable {
        var method: HTTPMethod
        var segments: [Segment]
        var handler: Handler

        /// 1 for a literal segment, 0 for a parameter: the larger mask (compared in order) is
        /// the more specific pattern.
        var literalMask: [Int] { segments.map { if case .literal = $0 { 1 } else { 0 } } }
    }

    private var routes: [Route] = []

    public init() {}

    /// Adds a route; `pattern` is a path whose `{name}` segments capture one path segment each.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, handler: @escaping Handler) {
        let segments = pathSegments(pattern).map { segment -> Segment in
            if segment.hasPrefix("{") && segment.hasSuffix("}") { return .parameter(String(segment.dropFirst().dropLast())) }
            return .literal(String(segment))
        }
        routes.append(Route(method: method, segments: segments, handler: handler))
    }

    /// Routes `request` to its handler or answers it with a 404 or 405 error.
    public func handle(_ request: HTTPRequest) {
        switch resolve(method: request.method, path: request.path) {
        case .found(let handler, let parameters): handler(request, parameters)
        case .refused(let error): request.respond(error.response)
        }
    }

    /// What ``handle(_:)`` would do for `method` and `path`.
    public enum Resolution: Sendable {
        case found(Handler, HTTPRouteParameters)
        case refused(HTTPError)
    }

    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        let segments = pathSegments(path)
        let matches = routes.compactMap { route in match(route.segments, segments).map { (route, $0) } }
        // Only the most literal pattern that matches owns the path.
        let owner = matches.map { $0.0.literalMask }.max { $0.lexicographicallyPrecedes($1) }
        var allowed: [HTTPMethod] = []
        for (route, parameters) in matches where route.literalMask == owner {
            if route.method == method { return .found(route.handler, parameters) }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if allowed.isEmpty {
            return .refused(HTTPError(status: 404, code: "not_found", message: "no resource at \(path)"))
        }
        let allow = allowed.map(\.rawValue).joined(separator: ", ")
        return .refused(HTTPError(status: 405, code: "method_not_allowed",
                                  message: "\(method.rawValue) is not allowed on \(path); allowed: \(allow)",
                                  headers: [("Allow", allow)]))
    }

    private func match(_ pattern: [Segment], _ segments: [Substring]) -> HTTPRouteParameters? {
        guard pattern.count == segments.count else { return nil }
        var parameters = HTTPRouteParameters()
        for (expected, actual) in zip(pattern, segments) {
            switch expected {
            case .literal(let literal):
                guard actual == literal else { return nil }
            case .parameter(let name):
                guard !actual.isEmpty, let value = HTTPRequestTarget.percentDecoded(actual.utf8) else { return nil }
                parameters.values.append((name, value))
            }
        }
        return parameters
    }
}

/// The values captured by a route's `{name}` segments.
public struct HTTPRouteParameters: Sendable {
    fileprivate(set) var values: [(name: String, value: String)] = []

    public subscript(name: String) -> String? {
        values.first { $0.name == name }?.value
    }
}

/// Splits a path on `/`, ignoring a trailing slash (`/v1/channels/` is `/v1/channels`).
private func pathSegments(_ path: String) -> [Substring] {
    path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().reversed().drop { $0.isEmpty }.reversed()
}
