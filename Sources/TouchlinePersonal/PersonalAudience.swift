import APNs
import TouchlineCore
import TouchlineStore

/// Who a personal push goes to: one token, one user's tokens, every push-to-start token
/// following a topic, or an explicit list of tokens (a dead-letter replay). Stored with the job
/// as JSON text (`{"follows":"team:ARS"}`, `{"tokens":["ab12…", …]}`, ...).
package enum PersonalAudience: Sendable, Equatable {
    case token(String)
    case userID(String)
    case follows(String)
    /// Sorted and free of duplicates (build it with ``tokenList(_:)``): pages are served in
    /// token order after the cursor, like the follow index.
    case tokens([String])

    /// An explicit token audience: `tokens` lowercased, sorted, each once.
    static func tokenList(_ tokens: some Sequence<String>) -> Self {
        .tokens(Set(tokens.lazy.map { $0.lowercased() }).sorted())
    }

    /// The audience as stored and shown (`{"token": ...}`, `{"userId": ...}`, `{"follows": ...}`, `{"tokens": [...]}`).
    package var json: JSONValue {
        switch self {
        case .token(let token): .object([.init("token", .string(token))])
        case .userID(let userID): .object([.init("userId", .string(userID))])
        case .follows(let follow): .object([.init("follows", .string(follow))])
        case .tokens(let tokens): .object([.init("tokens", .array(tokens.map(JSONValue.string)))])
        }
    }

    /// Reads the stored JSON text back; nil if it is not one of the four forms.
    package init?(storedText text: String) {
        guard let value = try? JSONParser.parse(Array(text.utf8)), case .object(let members) = value, members.count == 1 else { return nil }
        switch (members[0].name, members[0].value) {
        case ("token", .string(let token)): self = .token(token)
        case ("userId", .string(let userID)): self = .userID(userID)
        case ("follows", .string(let follow)): self = .follows(follow)
        case ("tokens", .array(let items)):
            var tokens: [String] = []
            for item in items {
                guard case .string(let token) = item else { return nil }
                tokens.append(token)
            }
            self = .tokenList(tokens)
        default: return nil
        }
    }

    /// The next page of active target tokens after `cursor`, read on the caller's thread.
    /// `.token` and `.userID` are one page; `.follows` walks the registry's follow index;
    /// `.tokens` walks its list, skipping tokens deleted from the registry or deactivated since
    /// (whatever their kind: the list is used as is). A page is empty only at the end.
    /// `kind` picks a user's tokens: push-to-start for `start`, update tokens otherwise.
    /// `environment` keeps registry tokens of the gateway's APNs environment only (nil: any), and
    /// `app` those registered for that app (a token works for one app's bundle id); a `.token`
    /// audience is sent as given (the intake refuses a token registered for another app). `bound`
    /// ends the walk before the first token at or after it (a slice of a cluster's job,
    /// ``AudienceSlice/upperBound``).
    func page(after cursor: String?, limit: Int, kind: TokenKind, app: String, environment: TokenEnvironment?, before bound: String? = nil,
              reader: any TokenRegistryReader) throws(StoreError) -> (tokens: [String], exhausted: Bool) {
        let page = try unboundedPage(after: cursor, limit: limit, kind: kind, app: app, environment: environment, listEnd: bound, reader: reader)
        guard let bound, let end = page.tokens.firstIndex(where: { $0 >= bound }) else { return page }
        return (Array(page.tokens[..<end]), true)
    }

    /// `listEnd`: a token list is looked up only up to it (a slice's bound: the tokens after it
    /// are other slices', which a partitioned registry holds elsewhere).
    private func unboundedPage(after cursor: String?, limit: Int, kind: TokenKind, app: String, environment: TokenEnvironment?,
                               listEnd: String?, reader: any TokenRegistryReader) throws(StoreError) -> (tokens: [String], exhausted: Bool) {
        switch self {
        case .token(let token):
            return (cursor == nil ? [token] : [], true)
        case .userID(let userID):
            guard cursor == nil else { return ([], true) }
            let tokens = try reader.tokens(userID: userID, app: app, limit: limit).filter {
                $0.active && $0.kind == kind && (environment == nil || $0.environment == environment)
            }.map(\.token)
            return (tokens, true)
        case .follows(let follow):
            let page = try reader.pushToStartTokens(following: follow, app: app, after: cursor, limit: limit, environment: environment)
                .map(\.token)
            return (page, page.count < limit)
        case .tokens(let tokens):
            var start = cursor.map { Self.firstIndex(in: tokens, after: $0) } ?? 0
            // Tokens are 64 hex digits and a bound four: none equals it, the first after it is the first at or after it.
            let count = listEnd.map { Self.firstIndex(in: tokens, after: $0) } ?? tokens.count
            while start < count {
                let end = min(start + limit, count)
                let active = try reader.activeTokens(among: Array(tokens[start..<end]), app: app, environment: environment)
                start = end
                if !active.isEmpty { return (active, start == count) }
            }
            return ([], true)
        }
    }

    /// Binary search in the sorted list: the index of the first token greater than `cursor`.
    private static func firstIndex(in tokens: [String], after cursor: String) -> Int {
        var low = 0, high = tokens.count
        while low < high {
            let middle = (low + high) / 2
            if tokens[middle] <= cursor { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension TokenEnvironment {
    /// The registry environment served by an APNs endpoint: production and sandbox tokens only
    /// work there; custom endpoints (a test server) take every token.
    package init?(apns environment: APNsEnvironment) {
        switch environment {
        case .production: self = .production
        case .sandbox: self = .sandbox
        case .custom: return nil
        }
    }
}
