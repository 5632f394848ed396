import TouchlineRuntime

/// Who may call the provider API: bearer keys, each scoped to a channel-id prefix or admin.
struct GatewayAccess: Sendable {
    let keys: [GatewayConfiguration.APIKey]

    /// The key the request carries: 401 when it is missing or unknown.
    func key(for request: HTTPRequest) throws(HTTPError) -> GatewayConfiguration.APIKey {
        try key(authorization: request.header("Authorization"))
    }

    /// The key an `Authorization` value (nil: the header is absent) names: 401 when it is
    /// missing or unknown.
    func key(authorization: String?) throws(HTTPError) -> GatewayConfiguration.APIKey {
        let token = try HTTPRequest.bearerToken(fromAuthorization: authorization)
        guard let key = keys.first(where: { $0.key == token }) else {
            throw HTTPError(status: 401, code: "invalid_api_key", message: "the API key is not known to this gateway",
                            headers: [("WWW-Authenticate", "Bearer")])
        }
        return key
    }

    /// The key of a request that touches channel `channelID`: 403 when the id is outside its scope.
    func key(for request: HTTPRequest, channelID: String) throws(HTTPError) -> GatewayConfiguration.APIKey {
        let key = try key(for: request)
        guard Self.allows(key, channelID) else {
            if case .channelPrefix(let prefix) = key.scope {
                throw HTTPError(status: 403, code: "forbidden",
                                message: "this API key may only touch channels whose id starts with '\(prefix)', not '\(channelID)'")
            }
            throw HTTPError(status: 403, code: "forbidden", message: "this API key may not touch channel '\(channelID)'")
        }
        return key
    }

    static func allows(_ key: GatewayConfiguration.APIKey, _ channelID: String) -> Bool {
        switch key.scope {
        case .admin: true
        case .channelPrefix(let prefix): channelID.hasPrefix(prefix)
        }
    }
}
