import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime

/// Who may call the provider API: bearer keys, each scoped to a channel-id prefix or admin.
///
/// A presented key is compared with the configured ones by SHA-256 digest, every byte of every
/// configured key's digest, with no early exit: how long the check takes says neither how much
/// of a guess was right (the digests are of equal length and differ all over for near misses)
/// nor which key, if any, matched.
package struct APIAccess: Sendable {
    let keys: [GatewayConfiguration.APIKey]
    /// The apps served, by name (`default` always).
    let apps: Set<String>
    /// `SHA256.digest` of each key's secret, in the order of `keys`.
    private let digests: [[UInt8]]

    package init(keys: [GatewayConfiguration.APIKey], apps: Set<String> = []) {
        self.keys = keys
        self.apps = apps.union([AppChannelID.defaultApp])
        digests = keys.map { SHA256.digest($0.key.utf8) }
    }

    /// The key the request carries: 401 when it is missing or unknown.
    func key(for request: HTTPRequest) throws(HTTPError) -> GatewayConfiguration.APIKey {
        try key(authorization: request.header("Authorization"))
    }

    /// The key an `Authorization` value (nil: the header is absent) names: 401 when it is
    /// missing or unknown.
    func key(authorization: String?) throws(HTTPError) -> GatewayConfiguration.APIKey {
        keys[try index(authorization: authorization)]
    }

    /// The position in `keys` of the key an `Authorization` value names: 401 when it is missing
    /// or unknown.
    func index(authorization: String?) throws(HTTPError) -> Int {
        let token = try HTTPRequest.bearerToken(fromAuthorization: authorization)
        guard let index = Self.match(SHA256.digest(token.utf8), among: digests) else {
            throw HTTPError(status: 401, code: "invalid_api_key", message: "the API key is not known to this gateway",
                            headers: [("WWW-Authenticate", "Bearer")])
        }
        return index
    }

    /// The index of the digest equal to `presented`, comparing against every one of them in
    /// full (constant time per digest, no early exit on a match).
    static func match(_ presented: [UInt8], among digests: [[UInt8]]) -> Int? {
        var found = -1
        for (index, digest) in digests.enumerated() {
            let equal = SHA256.constantTimeEqual(presented, digest)
            found = equal ? index : found
        }
        return found >= 0 ? found : nil
    }

    /// 403 when `channelID` (as kept: ``AppChannelID``) is outside `key`'s scope, naming the
    /// key's app and prefix and the channel's (never the key).
    package static func require(_ key: GatewayConfiguration.APIKey, covers channelID: String) throws(HTTPError) {
        guard !allows(key, channelID) else { return }
        let (app, id) = AppChannelID.split(channelID)
        if case .channelPrefix(let prefix) = key.scope {
            guard app == key.app else {
                throw HTTPError(status: 403, code: "forbidden",
                                message: "this API key belongs to app '\(key.app)' and may not touch channel '\(id)' of app '\(app)'")
            }
            throw HTTPError(status: 403, code: "forbidden",
                            message: "this API key may only touch channels whose id starts with '\(prefix)', not '\(id)'")
        }
        throw HTTPError(status: 403, code: "forbidden", message: "this API key may not touch channel '\(id)'")
    }

    package static func allows(_ key: GatewayConfiguration.APIKey, _ channelID: String) -> Bool {
        switch key.scope {
        case .admin: return true
        case .channelPrefix(let prefix):
            let (app, id) = AppChannelID.split(channelID)
            return app == key.app && id.hasPrefix(prefix)
        }
    }

    /// Where the routes of an app are: `/v1` (the `default` app) and `/v1/apps/{app}`.
    package static let appRouteBases = ["/v1", "/v1/apps/{app}"]

    /// The app a route's path names (`/v1/apps/{app}/...`; `default` without the segment): 404
    /// `app_not_found` when it is not served.
    func app(in parameters: HTTPRouteParameters) throws(HTTPError) -> String {
        guard let app = parameters["app"] else { return AppChannelID.defaultApp }
        guard apps.contains(app) else {
            throw HTTPError(status: 404, code: "app_not_found", message: "no app named '\(app)'")
        }
        return app
    }

    /// The kept id of the channel a route's path names: its `parameter` segment, in the app of
    /// ``app(in:)``. 404 for an id holding `/` (a decoded `%2F`): no provider id does, and it
    /// must not reach another app's channel.
    func channelID(in parameters: HTTPRouteParameters, parameter: String) throws(HTTPError) -> String {
        let id = try parameters.string(parameter)
        let app = try app(in: parameters)
        guard !id.contains("/") else { throw HTTPError(status: 404, code: "channel_not_found", message: "no channel with id '\(id)'") }
        return AppChannelID.qualified(id, app: app)
    }
}
