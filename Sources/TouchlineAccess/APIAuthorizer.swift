import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime

/// Who may call a route of the provider API, declared with the route (``APIRouter``).
package enum APIScope: Sendable, Equatable {
    /// Anyone, without a key: the probes, the dashboard's files, `/metrics` unless it needs a key.
    case open
    /// Any known key; what a prefix key sees is narrowed by the handler (lists, stats).
    case anyKey
    /// Admin keys only; `purpose` names the routes in the 403 ("personal pushes need an admin API key").
    case admin(purpose: String)
    /// A key whose scope covers the channel id in the path segment `parameter` (of the app in
    /// the path's `app` segment, `default` without one).
    case channel(parameter: String)
}

/// The caller of a route as the authorizer found it.
package struct APICaller: Sendable {
    /// The key the request presented; nil on ``APIScope/open`` routes.
    let key: GatewayConfiguration.APIKey?

    package init(key: GatewayConfiguration.APIKey?) {
        self.key = key
    }

    /// The caller's key: a 401 (never a trap) should an open route ask for one.
    package func requiredKey() throws(HTTPError) -> GatewayConfiguration.APIKey {
        guard let key else {
            throw HTTPError(status: 401, code: "missing_api_key", message: "this route needs an API key; send Authorization: Bearer <api key>",
                            headers: [("WWW-Authenticate", "Bearer")])
        }
        return key
    }
}

/// Checks a request against its route's ``APIScope`` with the configured keys, before the
/// handler runs: 401 without a known key, 403 outside the key's scope, then 404
/// `app_not_found` for a path naming an app not served (so no handler checks it again: they
/// read it with ``HTTPRouteCall/app``).
package struct APIAuthorizer: HTTPRouteAuthorizer {
    let access: APIAccess

    package func authorize(_ request: HTTPRequest, for scope: APIScope, parameters: HTTPRouteParameters) throws(HTTPError) -> APICaller {
        switch scope {
        case .open:
            return APICaller(key: nil)
        case .anyKey:
            let key = try access.key(for: request)
            _ = try access.app(in: parameters)
            return APICaller(key: key)
        case .admin(let purpose):
            let key = try access.key(for: request)
            guard key.scope == .admin else {
                throw HTTPError(status: 403, code: "forbidden", message: "\(purpose) need an admin API key")
            }
            _ = try access.app(in: parameters)
            return APICaller(key: key)
        case .channel(let parameter):
            let key = try access.key(for: request)
            try APIAccess.require(key, covers: try access.channelID(in: parameters, parameter: parameter))
            return APICaller(key: key)
        }
    }
}

extension HTTPRouteCall where Caller == APICaller {
    /// The app the route's path names (`/v1/apps/{app}/...`), `default` without one; the
    /// authorizer has refused an app that is not served.
    package var app: String { parameters["app"] ?? AppChannelID.defaultApp }
}

/// The provider API's router: routes declared with their ``APIScope``.
package typealias APIRouter = HTTPRouter<APIAuthorizer>

/// What a provider-API handler gets.
package typealias APICall = HTTPRouteCall<APICaller>
