import TouchlineCore
import TouchlineStore

/// Who a personal push goes to: one token, one user's tokens, or every push-to-start token
/// following a topic. Stored with the job as JSON text (`{"follows":"team:ARS"}`, ...).
enum GatewayPersonalAudience: Sendable, Equatable {
    case token(String)
    case userID(String)
    case follows(String)

    /// The audience as stored and shown (`{"token": ...}`, `{"userId": ...}`, `{"follows": ...}`).
    var json: JSONValue {
        switch self {
        case .token(let token): .object([.init("token", .string(token))])
        case .userID(let userID): .object([.init("userId", .string(userID))])
        case .follows(let follow): .object([.init("follows", .string(follow))])
        }
    }

    /// Reads the stored JSON text back; nil if it is not one of the three forms.
    init?(storedText text: String) {
        guard let value = try? JSONParser.parse(Array(text.utf8)), case .object(let members) = value,
              members.count == 1, case .string(let value) = members[0].value else { return nil }
        switch members[0].name {
        case "token": self = .token(value)
        case "userId": self = .userID(value)
        case "follows": self = .follows(value)
        default: return nil
        }
    }

    /// The next page of active target tokens after `cursor`, read on the caller's thread.
    /// `.token` and `.userID` are one page; `.follows` walks the registry's follow index.
    /// `kind` picks a user's tokens: push-to-start for `start`, update tokens otherwise.
    func page(after cursor: String?, limit: Int, kind: TokenKind,
              reader: SQLiteTokenReader) throws(StoreError) -> (tokens: [String], exhausted: Bool) {
        switch self {
        case .token(let token):
            return (cursor == nil ? [token] : [], true)
        case .userID(let userID):
            guard cursor == nil else { return ([], true) }
            let tokens = try reader.tokens(userID: userID, limit: limit).filter { $0.active && $0.kind == kind }.map(\.token)
            return (tokens, true)
        case .follows(let follow):
            let page = try reader.pushToStartTokens(following: follow, after: cursor, limit: limit).map(\.token)
            return (page, page.count < limit)
        }
    }
}
