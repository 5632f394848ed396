import TouchlineRuntime

/// Who may call the provider API: bearer keys, each scoped to a channel-id prefix or admin.
///
/// A presented key is compared with the configured ones by SHA-256 digest, every byte of every
/// configured key's digest, with no early exit: how long the check takes says neither how much
/// of a guess was right (the digests are of equal length and differ all over for near misses)
/// nor which key, if any, matched.
struct APIAccess: Sendable {
    let keys: [GatewayConfiguration.APIKey]
    /// `SHA256.digest` of each key's secret, in the order of `keys`.
    private let digests: [[UInt8]]

    init(keys: [GatewayConfiguration.APIKey]) {
        self.keys = keys
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

    /// The key of a request that touches channel `channelID`: 403 when the id is outside its scope.
    func key(for request: HTTPRequest, channelID: String) throws(HTTPError) -> GatewayConfiguration.APIKey {
        let key = try key(for: request)
        try Self.require(key, covers: channelID)
        return key
    }

    /// 403 when `channelID` is outside `key`'s scope, naming the key's prefix (never the key).
    static func require(_ key: GatewayConfiguration.APIKey, covers channelID: String) throws(HTTPError) {
        guard !allows(key, channelID) else { return }
        if case .channelPrefix(let prefix) = key.scope {
            throw HTTPError(status: 403, code: "forbidden",
                            message: "this API key may only touch channels whose id starts with '\(prefix)', not '\(channelID)'")
        }
        throw HTTPError(status: 403, code: "forbidden", message: "this API key may not touch channel '\(channelID)'")
    }

    static func allows(_ key: GatewayConfiguration.APIKey, _ channelID: String) -> Bool {
        switch key.scope {
        case .admin: true
        case .channelPrefix(let prefix): channelID.hasPrefix(prefix)
        }
    }
}
