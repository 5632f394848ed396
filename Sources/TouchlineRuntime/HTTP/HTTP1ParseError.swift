/// Why a request's head or body framing is refused, with the status the server answers.
///
/// The server answers every one of them itself, as the API's JSON error
/// (`{"error": code, "message": text}`), and closes the connection afterwards: once the framing
/// of one message is in doubt, nothing after it on the connection can be trusted (RFC 9112
/// §6.3), which is what keeps a second request hidden in a body from ever being executed.
/// Messages name the problem but never quote a header's value beyond framing fields, so no
/// credential is echoed.
public struct HTTP1ParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    /// A stable machine-readable code, e.g. `duplicate_content_length`.
    public var code: String
    public var message: String

    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    static func badRequest(_ code: String, _ message: String) -> HTTP1ParseError {
        HTTP1ParseError(status: 400, code: code, message: message)
    }

    /// The JSON error response for this refusal.
    public var response: HTTPResponse { .error(status: status, error: code, message: message) }

    public var description: String { "\(status) \(code): \(message)" }
}

/// Quotes a framing value (Content-Length, Transfer-Encoding, a chunk size) for an error
/// message: at most 40 characters, control and non-ASCII bytes shown as `?`.
func quotedForMessage<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
    let shown = bytes.prefix(40).map { $0 >= 0x20 && $0 < 0x7f ? Character(Unicode.Scalar($0)) : "?" }
    return "\"" + String(shown) + (bytes.count > 40 ? "…" : "") + "\""
}
