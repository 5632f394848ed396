import Testing
import TouchlineRuntime

@Suite struct HTTPRequestParsingTests {
    @Test func targetSplitsPathAndDecodesQueryItems() {
        let target = HTTPRequestTarget(parsing: "/v1/channels/a%2Fb?limit=10&q=a+b%20c&flag&empty=&limit=20#frag")
        #expect(target.path == "/v1/channels/a%2Fb")
        #expect(target.query == [
            .init(name: "limit", value: "10"), .init(name: "q", value: "a b c"), .init(name: "flag", value: ""),
            .init(name: "empty", value: ""), .init(name: "limit", value: "20"),
        ])
        #expect(target.queryValue("limit") == "10")
        #expect(target.queryValue("missing") == nil)
    }

    @Test func malformedEscapesAreKeptRawInTheQueryAndRejectedByTheDecoder() {
        #expect(HTTPRequestTarget(parsing: "/x?a=%zz&b=%e9").query == [.init(name: "a", value: "%zz"), .init(name: "b", value: "%e9")])
        #expect(HTTPRequestTarget.percentDecoded("%4".utf8) == nil)
        #expect(HTTPRequestTarget.percentDecoded("caf%C3%A9".utf8) == "café")
        #expect(HTTPRequestTarget(parsing: "/plain").query.isEmpty)
    }

    @Test func routerMatchesParametersAndExplains404And405() throws {
        var router = HTTPRouter()
        router.add(.post, "/v1/channels/{id}/events") { _ in }
        router.add(.post, "/v1/channels") { _ in }
        router.add(.get, "/v1/channels") { _ in }
        guard case .found(_, let parameters) = router.resolve(method: .post, path: "/v1/channels/m%20x/events/") else {
            Issue.record("route not found")
            return
        }
        #expect(parameters["id"] == "m x")
        guard case .refused(let notAllowed) = router.resolve(method: .delete, path: "/v1/channels") else {
            Issue.record("expected a refusal")
            return
        }
        #expect(notAllowed.status == 405)
        #expect(notAllowed.response.header("allow") == "POST, GET")
        guard case .refused(let notFound) = router.resolve(method: .post, path: "/v1/channels//events") else {
            Issue.record("an empty parameter must not match")
            return
        }
        #expect(notFound.status == 404)
    }

    @Test func aLiteralSegmentOwnsItsPathOverAParameter() throws {
        var router = HTTPRouter()
        router.add(.delete, "/v1/tokens/{token}") { _ in }
        router.add(.post, "/v1/tokens/batch") { _ in }
        guard case .found(_, let parameters) = router.resolve(method: .post, path: "/v1/tokens/batch") else {
            Issue.record("the literal route was not found")
            return
        }
        #expect(parameters["token"] == nil)
        guard case .refused(let notAllowed) = router.resolve(method: .delete, path: "/v1/tokens/batch") else {
            Issue.record("a DELETE of the literal path must not reach the parameter route")
            return
        }
        #expect(notAllowed.status == 405 && notAllowed.response.header("allow") == "POST")
        guard case .found(_, let token) = router.resolve(method: .delete, path: "/v1/tokens/abc") else {
            Issue.record("the parameter route must still match other segments")
            return
        }
        #expect(token["token"] == "abc")
        guard case .refused(let post) = router.resolve(method: .post, path: "/v1/tokens/abc") else {
            Issue.record("expected a refusal")
            return
        }
        #expect(post.status == 405 && post.response.header("allow") == "DELETE")
    }

    /// Every route whose pattern is the most literal match owns the path, in the order added;
    /// a literal elsewhere in a pattern of the same length does not take a path it does not spell.
    @Test func theMostLiteralMatchesOwnAPathInTheOrderTheyWereAdded() throws {
        var router = HTTPRouter()
        router.add(.get, "/v1/channels/{id}") { _ in }
        router.add(.get, "/v1/channels/stats") { _ in }
        router.add(.delete, "/v1/channels/{id}") { _ in }
        router.add(.post, "/v1/{kind}/{id}") { _ in }
        router.add(.patch, "/v1/channels/{id}") { _ in }
        guard case .refused(let byID) = router.resolve(method: .put, path: "/v1/channels/m1/") else {
            Issue.record("expected a refusal")
            return
        }
        #expect(byID.status == 405 && byID.response.header("allow") == "GET, DELETE, PATCH")
        guard case .refused(let stats) = router.resolve(method: .put, path: "/v1/channels/stats") else {
            Issue.record("expected a refusal")
            return
        }
        #expect(stats.status == 405 && stats.response.header("allow") == "GET")
        guard case .found(let route, let parameters) = router.resolve(method: .post, path: "/v1/tokens/t%2F1") else {
            Issue.record("the least literal route owns what no other matches")
            return
        }
        #expect(route.pattern == "/v1/{kind}/{id}" && parameters["kind"] == "tokens" && parameters["id"] == "t/1")
        guard case .refused(let root) = router.resolve(method: .get, path: "/") else {
            Issue.record("expected a refusal")
            return
        }
        #expect(root.status == 404)
    }

    @Test func bearerTokenNamesEachProblem() throws {
        #expect(try HTTPRequest.bearerToken(fromAuthorization: "Bearer abc.123") == "abc.123")
        #expect(try HTTPRequest.bearerToken(fromAuthorization: "bearer   abc") == "abc")
        #expect(try HTTPRequest.bearerToken(fromAuthorization: "  BeArEr é-clé") == "é-clé", "the scheme in any case; a key of any bytes but spaces")
        let cases: [(String?, String, String)] = [
            (nil, "missing_api_key", "the Authorization header is missing; send Authorization: Bearer <api key>"),
            ("   ", "missing_api_key", "the Authorization header is missing; send Authorization: Bearer <api key>"),
            ("Bearer", "missing_api_key", "the Authorization header has no API key after Bearer"),
            ("Bearer   ", "missing_api_key", "the Authorization header has no API key after Bearer"),
            ("Bearers abc", "invalid_authorization", "the Authorization header must use the Bearer scheme: send Authorization: Bearer <api key>"),
            ("Bear abc", "invalid_authorization", "the Authorization header must use the Bearer scheme: send Authorization: Bearer <api key>"),
            ("Bearer abc ", "invalid_authorization", "the API key after Bearer must not contain spaces"),
            ("Basic dTpw", "invalid_authorization", "the Authorization header must use the Bearer scheme: send Authorization: Bearer <api key>"),
            ("sk-live-0123456789abcdefghij", "invalid_authorization",
             "the Authorization header must use the Bearer scheme: send Authorization: Bearer <api key>"),
            ("Bearer a b", "invalid_authorization", "the API key after Bearer must not contain spaces"),
        ]
        for (value, code, message) in cases {
            #expect(throws: HTTPError(status: 401, code: code, message: message, headers: [("WWW-Authenticate", "Bearer")])) {
                try HTTPRequest.bearerToken(fromAuthorization: value)
            }
        }
    }

    @Test func errorResponsesHaveTheAPIShape() {
        let response = HTTPResponse.error(status: 422, error: "payload_too_large", message: "4100 bytes > 4096")
        #expect(response.status == 422)
        #expect(response.header("content-type") == "application/json")
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"error":"payload_too_large","message":"4100 bytes > 4096"}"#)
    }
}
