import TouchlineRuntime

/// What the gateway settles about a request from its head alone, before the HTTP server reads
/// (and holds) any of its body.
///
/// Every route that takes a body needs an API key (channels, events, tokens, personal jobs,
/// kick-off, replays; the dashboard's files and the probes take none), so a request that carries
/// a body is answered here when it can only be refused: 404 or 405 when no route takes it, 401
/// (the same JSON the routes give) without a known key. Its body is then never buffered, so a
/// flood of unauthenticated uploads costs a head each. Scope (403) and everything else stay
/// with the routes, which see the whole request; a request without a body goes to them as is.
struct GatewayAdmission: Sendable {
    let access: GatewayAccess
    let router: HTTPRouter

    /// The server's admission hook: nil admits the request.
    func refusal(_ head: HTTPRequestHead) -> HTTPError? {
        guard head.hasBody, let method = HTTPMethod(rawValue: head.method) else { return nil }
        if case .refused(let error) = router.resolve(method: method, path: HTTPRequestTarget(parsing: head.target).path) {
            return error
        }
        do {
            _ = try access.key(authorization: head.header("Authorization"))
            return nil
        } catch {
            return error
        }
    }
}
