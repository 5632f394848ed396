/// Dispatches requests by method and path pattern, e.g. `POST /v1/channels/{id}/events`, after
/// checking each route's declared authorization scope, and answers whatever a handler throws.
///
/// Routes are a table (``routes``): method, pattern and scope are data, so what the server
/// serves can be listed and checked (the API document's test reads this table), and no handler
/// repeats its own authorization or error wrapper. The scope's meaning belongs to the
/// application: its ``HTTPRouteAuthorizer`` turns a request and a scope into the caller the
/// handler gets, or refuses it (401, 403) before the handler runs.
///
/// A path no route matches gets a 404 JSON error; a path that matches only under other methods
/// gets a 405 JSON error with `Allow`; `OPTIONS` on a path that exists gets 204 with `Allow`. A literal segment wins over a parameter: when
/// `POST /v1/tokens/batch` and `DELETE /v1/tokens/{token}` both exist, `/v1/tokens/batch` belongs
/// to the first alone (a `DELETE` there is a 405, not a delete of a token named "batch").
/// Parameters are percent-decoded; a parameter whose encoding is invalid makes its route not
/// match. Built once at start-up, then used on the server's loop.
public struct HTTPRouter<Authorizer: HTTPRouteAuthorizer>: Sendable {
    /// A route's handler, on the server's loop; what it throws is answered for it.
    public typealias Handler = @Sendable (HTTPRouteCall<Authorizer.Caller>) throws(HTTPError) -> Void

    /// One row of the table.
    public struct Route: Sendable {
        public let method: HTTPMethod
        /// The path as declared, `{name}` marking a parameter segment.
        public let pattern: String
        public let scope: Authorizer.Scope
        fileprivate let handler: Handler
    }

    /// Every route, in the order added.
    public private(set) var routes: [Route] = []
    /// Each route's pattern, at its index in ``routes``: matched without the generic types.
    private var patterns = RoutePatternTable()
    private let authorizer: Authorizer

    public init(authorizer: Authorizer) {
        self.authorizer = authorizer
    }

    /// Adds a route; `pattern` is a path whose `{name}` segments capture one path segment each.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, scope: Authorizer.Scope, handler: @escaping Handler) {
        patterns.append(RoutePattern(pattern))
        routes.append(Route(method: method, pattern: pattern, scope: scope, handler: handler))
    }

    /// Routes `request`: authorizes it for its route's scope and runs the handler, or answers
    /// with the refusal (404, 405, the authorizer's, or what the handler threw).
    public func handle(_ request: HTTPRequest) {
        dispatch(request) { route, parameters throws(HTTPError) in try authorizer.authorize(request, for: route.scope, parameters: parameters) }
    }

    /// Whether `request` may use `route` (found by ``resolve(method:path:)``): the caller, or
    /// the refusal (401, 403). For a front that decides where a request is served before it is
    /// handled (in a cluster: here, or at the gateway owning its channel).
    public func authorize(_ request: HTTPRequest, for route: Route, parameters: HTTPRouteParameters) throws(HTTPError) -> Authorizer.Caller {
        try authorizer.authorize(request, for: route.scope, parameters: parameters)
    }

    /// Routes a request that was authorized another way (in a cluster, an event published
    /// straight to the cluster, where the NATS account's permissions stand for an API key): the
    /// handler runs with `caller`, without its route's scope being checked.
    public func handle(_ request: HTTPRequest, authorizedAs caller: Authorizer.Caller) {
        dispatch(request) { _, _ in caller }
    }

    /// Resolves `request`, finds its caller with `caller` and runs the handler, or answers with
    /// the refusal (404, 405, the caller's, or what the handler threw).
    private func dispatch(_ request: HTTPRequest,
                          caller: (Route, HTTPRouteParameters) throws(HTTPError) -> Authorizer.Caller) {
        if request.method == .options, let allowed = allowedMethods(path: request.path) {
            // Which methods the path takes, to anyone: the API document says as much.
            let allow = (allowed + [.options]).map(\.rawValue).joined(separator: ", ")
            request.respond(HTTPResponse(status: 204, headers: [("Allow", allow)]))
            return
        }
        do throws(HTTPError) {
            switch resolve(method: request.method, path: request.path) {
            case .found(let route, let parameters):
                try route.handler(HTTPRouteCall(request: request, caller: try caller(route, parameters), parameters: parameters))
            case .refused(let error):
                throw error
            }
        } catch {
            request.respond(error.response)
        }
    }

    /// What ``handle(_:)`` would route `method` and `path` to.
    public enum Resolution: Sendable {
        case found(Route, HTTPRouteParameters)
        case refused(HTTPError)
    }

    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        let owners = patterns.owners(of: path)
        if let owner = owners.first(where: { routes[$0.index].method == method }) { return .found(routes[owner.index], owner.parameters) }
        guard let allowed = allowedMethods(owners.map(\.index)) else {
            return .refused(HTTPError(status: 404, code: "not_found", message: "no resource at \(path)"))
        }
        let allow = allowed.map(\.rawValue).joined(separator: ", ")
        return .refused(HTTPError(status: 405, code: "method_not_allowed",
                                  message: "\(method.rawValue) is not allowed on \(path); allowed: \(allow)",
                                  headers: [("Allow", allow)]))
    }

    /// The methods the routes at `path` take, in the order they were added; nil when no route is
    /// there (404).
    /// `*` (only `OPTIONS` may ask it) stands for the server: every method some route takes.
    func allowedMethods(path: String) -> [HTTPMethod]? {
        allowedMethods(path == "*" ? Array(routes.indices) : patterns.owners(of: path).map(\.index))
    }

    /// The methods of the routes at `indices`, each once; nil when there are none. Routes are
    /// found by index, not collected into tuples with their parameters: tuples of the router's
    /// generic `Route` have their metadata made at run time, on every request.
    private func allowedMethods(_ indices: [Int]) -> [HTTPMethod]? {
        var allowed: [HTTPMethod] = []
        for index in indices where !allowed.contains(routes[index].method) { allowed.append(routes[index].method) }
        return allowed.isEmpty ? nil : allowed
    }
}
