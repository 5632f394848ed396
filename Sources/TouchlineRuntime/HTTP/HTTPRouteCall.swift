/// Decides who may call a route: the router asks it before every handler, with the route's
/// declared scope, so a handler never checks credentials itself.
public protocol HTTPRouteAuthorizer: Sendable {
    /// What a route declares about its callers (public, any key, admin, a channel of the path, …).
    associatedtype Scope: Sendable
    /// What the handler learns about the caller (e.g. the API key it presented).
    associatedtype Caller: Sendable

    /// The caller of `request` when `scope` admits it; otherwise the refusal to answer (401, 403).
    func authorize(_ request: HTTPRequest, for scope: Scope, parameters: HTTPRouteParameters) throws(HTTPError) -> Caller
}

/// The authorizer of a server whose routes are all open: every request is admitted.
public struct HTTPOpenAccess: HTTPRouteAuthorizer {
    public enum Scope: Sendable, Equatable { case open }

    public init() {}

    public func authorize(_ request: HTTPRequest, for scope: Scope, parameters: HTTPRouteParameters) throws(HTTPError) {}
}

extension HTTPRouter where Authorizer == HTTPOpenAccess {
    /// A router whose routes need no authorization.
    public init() {
        self.init(authorizer: HTTPOpenAccess())
    }

    /// Adds an open route.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, handler: @escaping Handler) {
        add(method, pattern, scope: .open, handler: handler)
    }
}

/// What a route's handler gets: the request to answer, its authorized caller, and the values of
/// the pattern's `{name}` segments.
public struct HTTPRouteCall<Caller: Sendable>: Sendable {
    public let request: HTTPRequest
    public let caller: Caller
    public let parameters: HTTPRouteParameters

    public init(request: HTTPRequest, caller: Caller, parameters: HTTPRouteParameters) {
        self.request = request
        self.caller = caller
        self.parameters = parameters
    }

    /// Sends `response` for the request (once; later calls are ignored).
    public func respond(_ response: HTTPResponse) {
        request.respond(response)
    }
}

/// The values captured by a route's `{name}` segments, read by name and type.
///
/// A name the pattern does not declare, or a value that is not of the asked type, is a 400 the
/// router answers, never a trap: a handler and its pattern can drift apart without crashing
/// the server.
public struct HTTPRouteParameters: Sendable {
    var values: [(name: String, value: String)] = []

    public init() {}

    /// The raw value of `name`, nil when the pattern has no such segment.
    public subscript(name: String) -> String? {
        values.first { $0.name == name }?.value
    }

    /// The value of `name`: 400 `invalid_path` when the route's pattern does not capture it.
    public func string(_ name: String) throws(HTTPError) -> String {
        guard let value = self[name] else {
            throw HTTPError(status: 400, code: "invalid_path", message: "the path has no '\(name)' segment")
        }
        return value
    }

    /// The value of `name` converted to `T`: 400 `invalid_path` when it is missing or is not a
    /// `T` (e.g. `abc` where a number is expected).
    public func value<T: LosslessStringConvertible>(_ name: String, as type: T.Type) throws(HTTPError) -> T {
        let text = try string(name)
        guard let value = T(text) else {
            throw HTTPError(status: 400, code: "invalid_path", message: "path segment '\(name)' must be \(T.self), got \"\(text)\"")
        }
        return value
    }
}
