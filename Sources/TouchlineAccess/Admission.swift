import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime

/// What the gateway settles about a request from its head alone, before the HTTP server reads
/// (and holds) any of its body.
///
/// Every route that takes a body needs an API key (channels, events, tokens, personal jobs,
/// kick-off, replays; the dashboard's files and the probes take none), so a request that carries
/// a body is answered here when it can only be refused: 404 or 405 when no route takes it, 401
/// (the same JSON the routes give) without a known key. Its body is then never buffered, so a
/// flood of unauthenticated uploads costs a head each. A request with a known key, body or not,
/// then takes one from its key's rate limit (429 with `Retry-After` when the bucket is empty).
/// Scope (403) and everything else stay with the routes, which see the whole request; a request
/// without a body and without a known key goes to them as is. An admitted body counts against its
/// key's share of the server's body budget (`http.maxBufferedBodyBytesPerKey`): the key's index is
/// the body's owner.
package struct Admission: Sendable {
    let access: APIAccess
    let router: APIRouter
    let limits: RequestLimits

    package init(access: APIAccess, router: APIRouter, limits: RequestLimits) {
        self.access = access
        self.router = router
        self.limits = limits
    }

    /// The server's admission hook.
    package func decide(_ head: HTTPRequestHead) -> HTTPAdmission {
        if head.hasBody, let method = HTTPMethod(rawValue: head.method),
           case .refused(let error) = router.resolve(method: method, path: HTTPRequestTarget(parsing: head.target).path) {
            return .refuse(error)
        }
        let index: Int
        do {
            index = try access.index(authorization: head.header("Authorization"))
        } catch {
            return head.hasBody ? .refuse(error) : .admit(bodyOwner: nil)
        }
        guard let seconds = limits.admit(keyIndex: index) else { return .admit(bodyOwner: index) }
        return .refuse(HTTPError(status: 429, code: "rate_limited",
                                 message: "this API key is over its request rate limit; retry after \(seconds) s",
                                 headers: [("Retry-After", String(seconds))]))
    }

    /// The keys' buckets with the clock, on the ingest loop (the HTTP server's loop, where the
    /// admission hook runs): `@unchecked Sendable` only so the hook's closure can capture it.
    package final class RequestLimits: @unchecked Sendable {
        private var buckets: KeyRateLimits
        private let clock: any WallClock
        /// Requests refused with 429, by the scope of their key (`admin` or the channel prefix:
        /// never the secret), for `/metrics`.
        package private(set) var refusedByScope: [String: Int] = [:]
        /// Each configured key's scope as metrics name it (`admin` or the channel prefix), in the
        /// order of the keys.
        package let scopes: [String]

        package init(keys: [GatewayConfiguration.APIKey], providerDefault: KeyRateLimit?, clock: any WallClock) {
            buckets = KeyRateLimits(keys: keys, providerDefault: providerDefault, now: clock.now())
            self.clock = clock
            scopes = keys.map { key in
                switch key.scope {
                case .admin: "admin"
                case .channelPrefix(let prefix): prefix
                }
            }
        }

        /// nil when admitted, else the seconds for `Retry-After`.
        func admit(keyIndex: Int) -> Int64? {
            let refusal = buckets.admit(keyIndex: keyIndex, now: clock.now())
            if refusal != nil { refusedByScope[scopes[keyIndex], default: 0] += 1 }
            return refusal
        }
    }
}
