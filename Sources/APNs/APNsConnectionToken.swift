import HTTP2

/// The provider token that the connections of one loop's pools carry.
///
/// APNs lets a connection change its token only 20 minutes after the connection first carried
/// one (`429 TooManyProviderTokenUpdates`), counted per connection. A connection opened late in
/// a token's life (after a GOAWAY or a lost connection) would be refused once the token is
/// renewed a few minutes later, and so would a connection that carried the old key's token when
/// the key rotates. So a connection carries one token for life: when the client is about to sign
/// with a token other than the connections', the pools open new connections and retire the old
/// ones (these open no new stream, hand back what was queued on them, finish what is in flight
/// and close), and a request a pool held goes out signed with the connections' token, never with
/// the one it was first signed with. A renewal (every 50 minutes) or a key rotation so costs
/// each connection one new TLS handshake.
///
/// Loop-confined (the pools' loop), hence `@unchecked Sendable`.
public final class APNsConnectionToken: @unchecked Sendable {
    /// The `authorization` value the current connections carry; nil before the first request.
    private(set) var bearer: String?
    /// The pools whose connections carry it (they hold this object weakly).
    var pools: [HTTP2ConnectionPool] = []

    init() {}

    /// The client signs a request with `bearer` and is about to send it: a token other than the
    /// connections' renews them first. The first token needs no renewal: no connection has
    /// carried one yet.
    func use(_ bearer: String) {
        guard bearer != self.bearer else { return }
        if self.bearer != nil {
            for pool in pools { pool.renewConnections() }
        }
        self.bearer = bearer
    }

    /// Gives a request a pool held the connections' token (``HTTP2ConnectionPool``'s
    /// `updateHeldRequest`).
    func sign(_ request: inout HTTP2Request) {
        guard let bearer else { return }
        request.headers.set(APNsClient.authorizationHeader, bearer, indexed: true)
    }
}
