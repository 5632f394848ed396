/// Reads of the committed token registry.
///
/// What a reader sees: only committed writes (a registration and the predecessor it replaced
/// appear together), each call one consistent state. Every read is bounded (a key lookup or a
/// page of `limit` after a cursor), so a fan-out streams a large audience through a fixed window.
/// Tokens are compared lowercased. An implementation may be confined to the thread that uses it.
public protocol TokenRegistryReader: AnyObject {
    /// The token with its follows (in follow order), active or not.
    func token(_ token: String) throws(StoreError) -> TokenRecord?

    /// Up to `limit` of a user's tokens of `app`, active and deactivated, with their follows: the
    /// newest registration first (ties in token order).
    func tokens(userID: String, app: String, limit: Int) throws(StoreError) -> [TokenRecord]

    /// Every token, active or not, with its follows: the next `limit` in ascending token order
    /// after `cursor` (nil to start); the last token of a page is the next cursor, an empty page
    /// the end. What a migration copies.
    func tokens(after cursor: String?, limit: Int) throws(StoreError) -> [TokenRecord]

    /// The audience scan by follow: the next `limit` *active push-to-start* tokens of `app`
    /// following `follow`, in ascending token order after `cursor` (nil to start), optionally of
    /// one environment. The last token of a page is the next cursor and an empty page is the end:
    /// walking pages visits every such token exactly once, without gaps or repeats; a token
    /// registered during the walk is seen if it sorts after the cursor.
    func pushToStartTokens(following follow: String, app: String, after cursor: String?, limit: Int,
                           environment: TokenEnvironment?) throws(StoreError) -> [TokenTarget]

    /// The audience scan by token list: those of `tokens` that are registered for `app` and
    /// active (any kind), optionally of one environment, in ascending token order.
    func activeTokens(among tokens: [String], app: String, environment: TokenEnvironment?) throws(StoreError) -> [String]

    /// Releases the reader (on its thread).
    func close()
}

/// The personal store's whole read side: the registry and the jobs, one connection.
public typealias PersonalStoreReader = TokenRegistryReader & PersonalJobReader
