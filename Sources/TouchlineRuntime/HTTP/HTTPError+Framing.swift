/// The refusals of ``HTTP1RequestParser``: framing it cannot read one way only.
///
/// The server answers each one itself, as the API's JSON error, and closes the connection
/// afterwards: once the framing of one message is in doubt, nothing after it on the connection
/// can be trusted (RFC 9112 §6.3), which is what keeps a second request hidden in a body from
/// ever being executed. Messages name the problem but quote no header value beyond the framing
/// fields, so no credential is echoed.
extension HTTPError {
    static func badRequest(_ code: String, _ message: String) -> HTTPError {
        HTTPError(status: 400, code: code, message: message)
    }
}

/// Quotes a framing value (Content-Length, Transfer-Encoding, a chunk size) for an error
/// message: at most 40 characters, control and non-ASCII bytes shown as `?`.
func quotedForMessage<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
    let shown = bytes.prefix(40).map { $0 >= 0x20 && $0 < 0x7f ? Character(Unicode.Scalar($0)) : "?" }
    return "\"" + String(shown) + (bytes.count > 40 ? "…" : "") + "\""
}
