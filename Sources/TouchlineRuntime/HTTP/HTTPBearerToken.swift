extension HTTPRequest {
    /// The API key sent as `Authorization: Bearer <key>`, or a 401 error naming what is wrong.
    public func bearerToken() throws(HTTPError) -> String {
        try HTTPRequest.bearerToken(fromAuthorization: header("Authorization"))
    }

    /// Extracts the token from an `Authorization` header value (nil: the header is absent).
    /// The scheme is matched case-insensitively, as RFC 9110 asks. No message quotes the value:
    /// a key sent without the `Bearer` scheme is the first word of it, and an error must never
    /// echo a credential.
    public static func bearerToken(fromAuthorization value: String?) throws(HTTPError) -> String {
        guard let value, !value.allSatisfy({ $0 == " " }) else {
            throw unauthorized("missing_api_key", "the Authorization header is missing; send Authorization: Bearer <api key>")
        }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts[0].lowercased() == "bearer" else {
            throw unauthorized("invalid_authorization",
                               "the Authorization header must use the Bearer scheme: send Authorization: Bearer <api key>")
        }
        let token = parts.count > 1 ? parts[1].drop { $0 == " " } : ""
        guard !token.isEmpty else {
            throw unauthorized("missing_api_key", "the Authorization header has no API key after Bearer")
        }
        guard !token.contains(" ") else {
            throw unauthorized("invalid_authorization", "the API key after Bearer must not contain spaces")
        }
        return String(token)
    }

    private static func unauthorized(_ code: String, _ message: String) -> HTTPError {
        HTTPError(status: 401, code: code, message: message, headers: [("WWW-Authenticate", "Bearer")])
    }
}
