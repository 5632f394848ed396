import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// What a token registration may hold, checked once for every route that takes tokens, user
/// ids or follows (the registry, personal audiences, kickoffs) and for the personal queue.
package enum TokenRegistration {
    /// Registrations per `POST /v1/tokens/batch` at most: about 1.3 MB of JSON, one commit.
    static let maximumBatchSize = 10_000
    static let fields: Set<JSONMemberName> = ["token", "kind", "channelId", "userId", "follows", "environment"]

    /// One registration (`POST /v1/tokens`, or an element of a batch) as the record to store,
    /// for `app` (an update token's channel is one of that app's); errors name the field with
    /// the body's prefix (`tokens[3].kind`).
    static func record(_ body: RequestBody, now: UnixTime, app: String = AppChannelID.defaultApp,
                       isKnownChannel: (String) -> Bool) throws(HTTPError) -> TokenRecord {
        let token = try validToken(try body.required(body.string("token"), "token"), field: body)
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
        // Kept as the channel's id in its app; a provider id never holds '/'.
        let keptChannelID = channelID.map { AppChannelID.qualified($0, app: app) }
        if let channelID, let keptChannelID, channelID.contains("/") || !isKnownChannel(keptChannelID) {
            throw HTTPError(status: 404, code: "channel_not_found", message: "no channel with id '\(channelID)' (field '\(body.path("channelId"))')")
        }
        let userID = try body.string("userId").map { (text) throws(HTTPError) in try validUserID(text, field: "userId", in: body) }
        var follows: [String] = []
        if let value = body.value("follows") {
            guard case .array(let items) = value, items.count <= maximumFollows else {
                throw body.invalid("follows", "must be an array of at most \(maximumFollows) strings")
            }
            for item in items {
                guard case .string(let follow) = item else { throw body.invalid("follows", "must hold strings") }
                follows.append(try validFollow(follow, field: "follows", in: body))
            }
        }
        let environmentName = try body.string("environment") ?? "production"
        guard let environment = TokenEnvironment(rawValue: environmentName) else {
            throw body.invalid("environment", "must be \"production\" or \"sandbox\", got \"\(environmentName)\"")
        }
        return TokenRecord(token: token, kind: kind, channelID: keptChannelID, userID: userID, follows: follows,
                           environment: environment, registeredAt: now, app: app)
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
        (64...200).contains(token.utf8.count) && HexBytes.isWholeBytes(token)
    }

    /// Follows per token at most: a fan's teams, competitions and matches, not a catalogue.
    static let maximumFollows = 100

    /// What a user id or a follow may not hold, as messages say it.
    static let refusedCharacters = "control characters (Unicode's Cc and Cf, U+2028, U+2029)"

    /// A user id: 1 to 256 bytes without control, format or separator characters (a NUL could
    /// make two ids one, a U+2028 cut the line it is shown on; ``IdentifierCharacters``).
    static func validUserID(_ text: String, field: String, in body: RequestBody) throws(HTTPError) -> String {
        guard (1...256).contains(text.utf8.count) else { throw body.invalid(field, "must be 1 to 256 bytes without \(refusedCharacters)") }
        if let problem = IdentifierCharacters.problem(in: text) {
            throw body.invalid(field, "must be 1 to 256 bytes without \(refusedCharacters); it \(problem)")
        }
        return text
    }

    /// A topic a token follows: 1 to 128 bytes without control, format or separator characters,
    /// like "team:ARS".
    package static func validFollow(_ text: String, field: String, in body: RequestBody) throws(HTTPError) -> String {
        let rule = "must hold strings of 1 to 128 bytes without \(refusedCharacters), like \"team:ARS\" or \"channel:match-1\""
        guard (1...128).contains(text.utf8.count) else { throw body.invalid(field, rule) }
        if let problem = IdentifierCharacters.problem(in: text) { throw body.invalid(field, "\(rule); one \(problem)") }
        return text
    }

    /// A registration as the API shows it.
    static func json(_ record: TokenRecord) -> JSONValue {
        var members: [JSONValue.Member] = [.init("token", .string(record.token)),
                                           .init("kind", .string(record.kind == .update ? "update" : "push-to-start"))]
        if let channelID = record.channelID { members.append(.init("channelId", .string(AppChannelID.split(channelID).id))) }
        members += AppChannelID.member(naming: record.app)
        if let userID = record.userID { members.append(.init("userId", .string(userID))) }
        members.append(.init("follows", .array(record.follows.map(JSONValue.string))))
        members.append(.init("environment", .string(record.environment.rawValue)))
        members.append(.init("registeredAt", .integer(record.registeredAt.seconds)))
        members.append(.init("active", .bool(record.active)))
        return .object(members)
    }
}
