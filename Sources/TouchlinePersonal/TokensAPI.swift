import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The token registry under `/v1/tokens`: the app's backend registers the ActivityKit push
/// tokens of its users here, for personal pushes and push-to-start.
///
/// Tokens belong to the app, not to a provider's channels, so these routes need an admin key.
/// Writes are answered after the store has committed them; reads are small indexed look-ups
/// (``TokenLookups``: the gateway's own read connection, or a partitioned registry's owners).
///
/// Owns what the routes need: the personal store (writes), the registry's look-ups, and
/// a look-up of the channels an update token may name. On the ingest loop (`@unchecked
/// Sendable` only so route closures and store completions can capture it).
package final class TokensAPI: APIFeature, @unchecked Sendable {
    private let loop: EventLoop
    private let clock: any WallClock
    private let personalStore: any PersonalStoreWriter
    private let lookups: any TokenLookups
    /// This gateway's copy of the registry (on a cluster, built from the log while it serves).
    private let registry: any TokenRegistryCopy
    /// Whether a kept channel id (``AppChannelID``) names a channel of this gateway (an update token must).
    private let isKnownChannel: (String) -> Bool

    package init(loop: EventLoop, clock: any WallClock, personalStore: any PersonalStoreWriter, lookups: any TokenLookups,
         registry: any TokenRegistryCopy, isKnownChannel: @escaping (String) -> Bool) {
        self.registry = registry
        self.loop = loop
        self.clock = clock
        self.personalStore = personalStore
        self.lookups = lookups
        self.isKnownChannel = isKnownChannel
    }

    /// The registry routes, under `/v1` for the `default` app and under `/v1/apps/{app}` for
    /// any served app: a token belongs to the app it was registered for.
    package func addRoutes(to router: inout APIRouter) {
        let scope = APIScope.admin(purpose: "token registry routes")
        for base in APIAccess.appRouteBases {
            router.add(.post, "\(base)/tokens", scope: scope) { [self] call throws(HTTPError) in
                try requireRegistry()
                try registerToken(call.request, app: call.app)
            }
            router.add(.post, "\(base)/tokens/batch", scope: scope) { [self] call throws(HTTPError) in
                try requireRegistry()
                try registerTokens(call.request, app: call.app)
            }
            router.add(.get, "\(base)/tokens", scope: scope) { [self] call throws(HTTPError) in
                try requireRegistry()
                try listTokens(call.request, app: call.app)
            }
            router.add(.delete, "\(base)/tokens/{token}", scope: scope) { [self] call throws(HTTPError) in
                try requireRegistry()
                deleteToken(call.request, token: try call.parameters.string("token"), app: call.app)
            }
        }
    }


    /// On a cluster gateway whose copy of the registry is still being built from the log (a new
    /// gateway), 503: a read would miss tokens, and a registration would wait for the copy to
    /// apply it. Another gateway answers meanwhile.
    private func requireRegistry() throws(HTTPError) {
        guard !registry.isCaughtUp else { return }
        let progress = registry.catchUpProgress
        throw HTTPError(status: 503, code: "registry_catching_up",
                        message: "this gateway's copy of the token registry is still being built (log sequence \(progress.applied) of \(progress.target)); retry shortly or through another gateway",
                        headers: [("Retry-After", "5")])
    }


    private func registerToken(_ request: HTTPRequest, app: String) throws(HTTPError) {
        let record = try TokenRegistration.record(RequestBody(parsing: request.body, allowed: TokenRegistration.fields), now: clock.now(), app: app,
                                                  isKnownChannel: isKnownChannel)
        try commit([record], for: request, savedAs: "the token") { .json(status: 201, TokenRegistration.json(record)) }
    }

    /// `{"tokens": [registration, ...]}`: every registration is validated before anything is
    /// written (the first bad one is named by its index), then all of them commit in one store
    /// submit, so a bulk import costs one group commit per request instead of one per token.
    private func registerTokens(_ request: HTTPRequest, app: String) throws(HTTPError) {
        let body = try RequestBody(parsing: request.body, allowed: ["tokens"])
        guard case .array(let items) = try body.required(body.value("tokens"), "tokens"),
              (1...TokenRegistration.maximumBatchSize).contains(items.count) else {
            throw body.invalid("tokens", "must be an array of 1 to \(TokenRegistration.maximumBatchSize) token registrations")
        }
        let now = clock.now()
        var records: [TokenRecord] = []
        records.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            records.append(try TokenRegistration.record(RequestBody(item, allowed: TokenRegistration.fields, prefix: "tokens[\(index)]."), now: now,
                                                        app: app, isKnownChannel: isKnownChannel))
        }
        let registered = JSONValue.object([.init("registered", .integer(Int64(records.count)))])
        try commit(records, for: request, savedAs: "the tokens") { .json(status: 201, registered) }
    }

    /// Registers `records` in one store submit and answers with `response()` once committed.
    private func commit(_ records: [TokenRecord], for request: HTTPRequest, savedAs what: String,
                        response: @escaping @Sendable () -> HTTPResponse) throws(HTTPError) {
        try personalStore.requireWritable()
        personalStore.submit(records.map { .registerToken($0) }) { [self] result in
            loop.execute {
                switch result {
                case .success: request.respond(response())
                case .failure(let error):
                    request.respond(HTTPError.writeFailed(error, saving: what).response)
                }
            }
        }
    }

    private func listTokens(_ request: HTTPRequest, app: String) throws(HTTPError) {
        guard let userID = request.target.queryValue("userId"), !userID.isEmpty else {
            throw HTTPError(status: 400, code: "invalid_query", message: "query 'userId' is required (tokens are listed per user)")
        }
        if let problem = IdentifierCharacters.problem(in: userID) {
            throw HTTPError(status: 400, code: "invalid_query",
                            message: "query 'userId' must be without \(TokenRegistration.refusedCharacters); it \(problem)")
        }
        lookups.tokens(userID: userID, app: app, limit: 100) { found in
            switch found {
            case .success(let records):
                request.respond(.json(status: 200, .object([.init("tokens", .array(records.map(TokenRegistration.json)))])))
            case .failure(let error):
                request.respond(HTTPError.readFailed(error, reading: "tokens").response)
            }
        }
    }

    private func deleteToken(_ request: HTTPRequest, token rawToken: String, app: String) {
        let token = rawToken.lowercased()
        lookups.token(token) { [self] found in
            do throws(HTTPError) {
                let known: TokenRecord?
                do throws(StoreError) { known = try found.get() } catch {
                    throw HTTPError.readFailed(error, reading: "the token")
                }
                // Another app's token is not this app's to delete: as unknown here.
                guard known?.app == app else {
                    throw HTTPError(status: 404, code: "token_not_found", message: "no token \(token.prefix(8))… is registered")
                }
                try personalStore.requireWritable()
                personalStore.submit([.deleteToken(token)]) { [self] result in
                    loop.execute {
                        switch result {
                        case .success: request.respond(.json(status: 200, .object([.init("deleted", true)])))
                        case .failure(let error):
                            request.respond(HTTPError.writeFailed(error, saving: "the token's deletion").response)
                        }
                    }
                }
            } catch {
                request.respond(error.response)
            }
        }
    }
}
