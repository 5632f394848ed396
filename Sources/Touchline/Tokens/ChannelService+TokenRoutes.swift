import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The token registry under `/v1/tokens`: the app's backend registers the ActivityKit push
/// tokens of its users here, for personal pushes and push-to-start.
///
/// Tokens belong to the app, not to a provider's channels, so these routes need an admin key.
/// Writes are answered after the store has committed them; reads use the gateway's own
/// read connection on the ingest loop (small indexed look-ups).
extension ChannelService {
    func addTokenRoutes(to router: inout HTTPRouter) {
        router.add(.post, "/v1/tokens") { [self] request, _ in adminRequest(request, for: "token registry routes") { () throws(HTTPError) in try registerToken(request) } }
        router.add(.post, "/v1/tokens/batch") { [self] request, _ in
            adminRequest(request, for: "token registry routes") { () throws(HTTPError) in try registerTokens(request) }
        }
        router.add(.get, "/v1/tokens") { [self] request, _ in adminRequest(request, for: "token registry routes") { () throws(HTTPError) in try listTokens(request) } }
        router.add(.delete, "/v1/tokens/{token}") { [self] request, parameters in
            adminRequest(request, for: "token registry routes") { () throws(HTTPError) in try deleteToken(request, token: parameters["token"]!) }
        }
    }

    private func registerToken(_ request: HTTPRequest) throws(HTTPError) {
        let record = try tokenRecord(RequestBody(parsing: request.body, allowed: Self.registrationFields), now: clock.now())
        try commit([record], for: request, savedAs: "the token") { .json(status: 201, Self.json(record)) }
    }

    /// `{"tokens": [registration, ...]}`: every registration is validated before anything is
    /// written (the first bad one is named by its index), then all of them commit in one store
    /// submit, so a bulk import costs one group commit per request instead of one per token.
    private func registerTokens(_ request: HTTPRequest) throws(HTTPError) {
        let body = try RequestBody(parsing: request.body, allowed: ["tokens"])
        guard case .array(let items) = try body.required(body.value("tokens"), "tokens"),
              (1...Self.maximumBatchSize).contains(items.count) else {
            throw body.invalid("tokens", "must be an array of 1 to \(Self.maximumBatchSize) token registrations")
        }
        let now = clock.now()
        var records: [TokenRecord] = []
        records.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            records.append(try tokenRecord(RequestBody(item, allowed: Self.registrationFields, prefix: "tokens[\(index)]."), now: now))
        }
        let registered = JSONValue.object([.init("registered", .integer(Int64(records.count)))])
        try commit(records, for: request, savedAs: "the tokens") { .json(status: 201, registered) }
    }

    /// Registrations per `POST /v1/tokens/batch` at most: about 1.3 MB of JSON, one commit.
    static let maximumBatchSize = 10_000
    private static let registrationFields: Set<JSONMemberName> = ["token", "kind", "channelId", "userId", "follows", "environment"]

    /// One registration (`POST /v1/tokens`, or an element of a batch) as the record to store;
    /// errors name the field with the body's prefix (`tokens[3].kind`).
    private func tokenRecord(_ body: RequestBody, now: UnixTime) throws(HTTPError) -> TokenRecord {
        let token = try Self.validToken(try body.required(body.string("token"), "token"), field: body)
        let kindName = try body.required(body.string("kind"), "kind")
        let kind: TokenKind
        switch kindName {
        case "update": kind = .update
        case "push-to-start": kind = .pushToStart
        default: throw body.invalid("kind", "must be \"update\" or \"push-to-start\", got \"\(kindName)\"")
        }
        let channelID = try body.string("channelId")
        if kind == .update, channelID == nil { throw body.invalid("channelId", "is required for an update token (the activity's channel)") }
        if kind == .pushToStart, channelID != nil { throw body.invalid("channelId", "belongs to update tokens only") }
        if let channelID, channels[channelID] == nil {
            throw HTTPError(status: 404, code: "channel_not_found", message: "no channel with id '\(channelID)' (field '\(body.path("channelId"))')")
        }
        let userID = try body.string("userId").map { (text) throws(HTTPError) in try Self.validUserID(text, field: "userId", in: body) }
        var follows: [String] = []
        if let value = body.value("follows") {
            guard case .array(let items) = value, items.count <= Self.maximumFollows else {
                throw body.invalid("follows", "must be an array of at most \(Self.maximumFollows) strings")
            }
            for item in items {
                guard case .string(let follow) = item else { throw body.invalid("follows", "must hold strings") }
                follows.append(try Self.validFollow(follow, field: "follows", in: body))
            }
        }
        let environmentName = try body.string("environment") ?? "production"
        guard let environment = TokenEnvironment(rawValue: environmentName) else {
            throw body.invalid("environment", "must be \"production\" or \"sandbox\", got \"\(environmentName)\"")
        }
        return TokenRecord(token: token, kind: kind, channelID: channelID, userID: userID, follows: follows,
                           environment: environment, registeredAt: now)
    }

    /// Registers `records` in one store submit and answers with `response()` once committed.
    private func commit(_ records: [TokenRecord], for request: HTTPRequest, savedAs what: String,
                        response: @escaping @Sendable () -> HTTPResponse) throws(HTTPError) {
        try requireWritableStore(personalStore)
        personalStore.submit(records.map { .registerToken($0) }) { [self] result in
            loop.execute {
                switch result {
                case .success: request.respond(response())
                case .failure(let error):
                    request.respond(Self.writeFailed(error, saving: what).response)
                }
            }
        }
    }

    private func listTokens(_ request: HTTPRequest) throws(HTTPError) {
        guard let userID = request.target.queryValue("userId"), !userID.isEmpty else {
            throw HTTPError(status: 400, code: "invalid_query", message: "query 'userId' is required (tokens are listed per user)")
        }
        let records: [TokenRecord]
        do { records = try tokenReader.tokens(userID: userID) } catch {
            throw HTTPError(status: 500, code: "store_failed", message: "reading tokens failed: \(error)")
        }
        request.respond(.json(status: 200, .object([.init("tokens", .array(records.map(Self.json)))])))
    }

    private func deleteToken(_ request: HTTPRequest, token rawToken: String) throws(HTTPError) {
        let token = rawToken.lowercased()
        let known: TokenRecord?
        do { known = try tokenReader.token(token) } catch {
            throw HTTPError(status: 500, code: "store_failed", message: "reading the token failed: \(error)")
        }
        guard known != nil else {
            throw HTTPError(status: 404, code: "token_not_found", message: "no token \(token.prefix(8))… is registered")
        }
        try requireWritableStore(personalStore)
        personalStore.submit([.deleteToken(token)]) { [self] result in
            loop.execute {
                switch result {
                case .success: request.respond(.json(status: 200, .object([.init("deleted", true)])))
                case .failure(let error):
                    request.respond(Self.writeFailed(error, saving: "the token's deletion").response)
                }
            }
        }
    }

    /// A device token as APNs takes it: whole bytes in hex, 64 to 200 digits (ActivityKit tokens
    /// are 32 bytes and more), stored lowercase. `body` names the field in the error.
    static func validToken(_ token: String, field body: RequestBody) throws(HTTPError) -> String {
        guard isWellFormedToken(token) else {
            throw body.invalid("token", "must be an even number (64 to 200) of hex digits (the ActivityKit push token)")
        }
        return token.lowercased()
    }

    /// Whole bytes in hex, 64 to 200 digits: what APNs takes in `/3/device/{token}`.
    static func isWellFormedToken(_ token: String) -> Bool {
        (64...200).contains(token.utf8.count) && token.utf8.count.isMultiple(of: 2)
            && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Follows per token at most: a fan's teams, competitions and matches, not a catalogue.
    static let maximumFollows = 100

    /// A user id: 1 to 256 bytes without control characters (a NUL could make two ids one).
    static func validUserID(_ text: String, field: String, in body: RequestBody) throws(HTTPError) -> String {
        guard (1...256).contains(text.utf8.count), !Self.hasControlCharacters(text) else {
            throw body.invalid(field, "must be 1 to 256 bytes without control characters")
        }
        return text
    }

    /// A topic a token follows: 1 to 128 bytes without control characters, like "team:ARS".
    static func validFollow(_ text: String, field: String, in body: RequestBody) throws(HTTPError) -> String {
        guard (1...128).contains(text.utf8.count), !Self.hasControlCharacters(text) else {
            throw body.invalid(field, "must hold strings of 1 to 128 bytes without control characters, like \"team:ARS\" or \"channel:match-1\"")
        }
        return text
    }

    private static func hasControlCharacters(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    private static func json(_ record: TokenRecord) -> JSONValue {
        var members: [JSONValue.Member] = [.init("token", .string(record.token)),
                                           .init("kind", .string(record.kind == .update ? "update" : "push-to-start"))]
        if let channelID = record.channelID { members.append(.init("channelId", .string(channelID))) }
        if let userID = record.userID { members.append(.init("userId", .string(userID))) }
        members.append(.init("follows", .array(record.follows.map(JSONValue.string))))
        members.append(.init("environment", .string(record.environment.rawValue)))
        members.append(.init("registeredAt", .integer(record.registeredAt.seconds)))
        members.append(.init("active", .bool(record.active)))
        return .object(members)
    }
}
