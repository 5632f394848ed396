import TouchlineCore

/// An HTTP/1.1 response to send with ``HTTPRequest/respond(_:)``.
///
/// `Content-Length`, `Date` and, when the connection closes after it, `Connection: close` are
/// added by the server (which drops those given here); the rest is what is given here.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response; the value is encoded with the deterministic ``JSONValue`` encoder.
    public static func json(status: Int, _ value: JSONValue) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: value.encoded)
    }

    /// The API's error shape, `{"error": code, "message": text}`: `error` is a stable
    /// machine-readable code, `message` names the field or cause for a human.
    public static func error(status: Int, error: String, message: String) -> HTTPResponse {
        json(status: status, ["error": .string(error), "message": .string(message)])
    }

    /// The first value of a header, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body
            && lhs.headers.map { [$0.name, $0.value] } == rhs.headers.map { [$0.name, $0.value] }
    }
}

/// A request the API refuses, carried as an error until it is turned into a response.
public struct HTTPError: Error, Sendable, Equatable {
    public var status: Int
    /// A stable machine-readable code, e.g. `missing_api_key`.
    public var code: String
    public var message: String
    /// Extra headers for the response (`Allow`, `WWW-Authenticate`).
    public var headers: [(name: String, value: String)]

    public init(status: Int, code: String, message: String, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The JSON error response for this refusal.
    public var response: HTTPResponse {
        var response = HTTPResponse.error(status: status, error: code, message: message)
        response.headers.append(contentsOf: headers)
        return response
    }

    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool {
        lhs.response == rhs.response
    }
}

/// The reason phrase for the status line.
func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 204: "No Content"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 413: "Payload Too Large"
    case 415: "Unsupported Media Type"
    case 417: "Expectation Failed"
    case 422: "Unprocessable Content"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 505: "HTTP Version Not Supported"
    default: "Status \(status)"
    }
}
