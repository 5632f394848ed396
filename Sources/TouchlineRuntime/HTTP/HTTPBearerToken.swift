extension HTTPRequest {
    /// The API key sent as `Authorization: Bearer <key>`, or a 401 error naming what is wrong.
    public func bearerToken() throws(HTTPError) -> String {
        try HTTPRequest.bearerToken(fromAuthorization: header("Authorization"))
    }

    /// Extracts the token from an `Authorization` header value (nil: the header is absent).
    /// The scheme is matched case-insensitively, as RFC 9110 asks. No message quotes the value:
    /// a key sent without the `Bearer` scheme is the first word of it, and an error must never
    /// echo a credential.
    ///
    /// Read byte by byte (spaces and the scheme are ASCII): it runs for every request with a key.
    public static func bearerToken(fromAuthorization value: String?) throws(HTTPError) -> String {
        guard let value, !value.utf8.allSatisfy({ $0 == space }) else {
            throw unauthorized("missing_api_key", "the Authorization header is missing; send Authorization: Bearer <api key>")
        }
        let bytes = value.utf8
        let schemeStart = bytes.firstIndex { $0 != space }!
        let schemeEnd = bytes[schemeStart...].firstIndex(of: space) ?? bytes.endIndex
        guard bytes[schemeStart..<schemeEnd].elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) else {
            throw unauthorized("invalid_authorization",
                               "the Authorization header must use the Bearer scheme: send Authorization: Bearer <api key>")
        }
        let tokenStart = bytes[schemeEnd...].firstIndex { $0 != space } ?? bytes.endIndex
        guard tokenStart != bytes.endIndex else {
            throw unauthorized("missing_api_key", "the Authorization header has no API key after Bearer")
        }
        guard !bytes[tokenStart...].contains(space) else {
            throw unauthorized("invalid_authorization", "the API key after Bearer must not contain spaces")
        }
        return String(value[tokenStart...])
    }

    private static let space = UInt8(ascii: " ")

    private static func unauthorized(_ code: String, _ message: String) -> HTTPError {
        HTTPError(status: 401, code: code, message: message, headers: [("WWW-Authenticate", "Bearer")])
    }
}
