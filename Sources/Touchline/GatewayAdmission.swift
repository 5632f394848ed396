import TouchlineRuntime

/// What the gateway settles about a request from its head alone, before the HTTP server reads
/// (and holds) any of its body.
///
/// Every route that takes a body needs an API key (channels, events, tokens, personal jobs,
/// kick-off, replays; the dashboard's files and the probes take none), so a request that carries
/// a body without a known key is answered 401 here, with the same JSON the routes give, and its
/// body is never buffered: a flood of unauthenticated uploads costs a head each. Scope (403) and
/// everything else stay with the routes, which see the whole request.
struct GatewayAdmission: Sendable {
    let access: GatewayAccess

    /// The server's admission hook: nil admits the request.
    func refusal(_ head: HTTPRequestHead) -> HTTPError? {
        guard head.hasBody else { return nil }
        do {
            _ = try access.key(authorization: head.header("Authorization"))
            return nil
        } catch {
            return error
        }
    }
}
