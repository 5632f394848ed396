import TouchlineStore

/// How the token routes and the job intake look tokens up, on the ingest loop: the answer comes
/// on the ingest loop too, at once from a registry this gateway holds whole, or once the
/// partitions' owners answered (a partitioned cluster registry: docs/cluster.md, "The
/// partitioned token registry").
package protocol TokenLookups: AnyObject {
    /// Whether a job for a user's tokens lists them when it is accepted: a slice of a
    /// partitioned registry reads only its own partition, so the intake resolves the user's
    /// tokens at their partitions' owners, and the job walks that list.
    var resolvesUsersAtIntake: Bool { get }
    /// The token's record, active or not; nil when it is not registered.
    func token(_ token: String, answer: @escaping @Sendable (Result<TokenRecord?, StoreError>) -> Void)
    /// Up to `limit` of a user's tokens of `app` (``TokenRegistryReader/tokens(userID:app:limit:)``).
    func tokens(userID: String, app: String, limit: Int, answer: @escaping @Sendable (Result<[TokenRecord], StoreError>) -> Void)
}

/// ``TokenLookups`` of a registry read whole through one reader: answered at once, in the call.
package final class ReaderTokenLookups: TokenLookups {
    private let reader: any TokenRegistryReader

    package init(_ reader: any TokenRegistryReader) { self.reader = reader }

    /// The job's slice reads the user's tokens itself, when it runs.
    package var resolvesUsersAtIntake: Bool { false }

    package func token(_ token: String, answer: @escaping @Sendable (Result<TokenRecord?, StoreError>) -> Void) {
        answer(Result { () throws(StoreError) in try reader.token(token) })
    }

    package func tokens(userID: String, app: String, limit: Int, answer: @escaping @Sendable (Result<[TokenRecord], StoreError>) -> Void) {
        answer(Result { () throws(StoreError) in try reader.tokens(userID: userID, app: app, limit: limit) })
    }
}
