#if canImport(Glibc)
import Glibc
#endif

/// Writes response heads and chunks as HTTP/1.1 bytes. Pure.
///
/// The server owns the framing: `Content-Length`, `Transfer-Encoding`, `Connection` and `Date`
/// given by a handler are dropped and written by the encoder instead, so a handler can never
/// frame a response two ways. CR, LF and NUL in a header value are replaced by spaces, so no
/// value can start a header (or a response) of its own.
enum HTTP1ResponseEncoder {
    /// How the body that follows the head is delimited.
    enum Framing: Equatable {
        /// `Content-Length`; the body follows (unless the request was HEAD).
        case length(Int)
        /// `Transfer-Encoding: chunked` (a stream to an HTTP/1.1 client).
        case chunked
        /// Neither: the body ends when the connection closes (a stream to an HTTP/1.0 client).
        case untilClose
    }

    /// What the `Connection` header says.
    enum Persistence: Equatable {
        /// HTTP/1.1's default: no header.
        case keepAlive
        /// `Connection: keep-alive`, which an HTTP/1.0 client needs to keep the connection.
        case keepAliveHTTP10
        /// `Connection: close`: this is the last response on the connection.
        case close
    }

    static let continueResponse = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    static let lastChunk = Array("0\r\n\r\n".utf8)

    static func head(status: Int, headers: [(name: String, value: String)], framing: Framing, persistence: Persistence,
                     date: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
        out += "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n".utf8
        for header in headers where !isServerOwned(header.name) {
            out += header.name.utf8.filter(HTTP1Grammar.isTokenChar)
            out += ": ".utf8
            out += header.value.utf8.map { $0 == HTTP1Grammar.cr || $0 == HTTP1Grammar.lf || $0 == 0 ? HTTP1Grammar.space : $0 }
            out += "\r\n".utf8
        }
        switch framing {
        case .length(let length) where status != 204 && status != 304 && !(100..<200).contains(status):
            out += "Content-Length: \(length)\r\n".utf8
        case .chunked:
            out += "Transfer-Encoding: chunked\r\n".utf8
        case .length, .untilClose:
            break
        }
        switch persistence {
        case .keepAlive: break
        case .keepAliveHTTP10: out += "Connection: keep-alive\r\n".utf8
        case .close: out += "Connection: close\r\n".utf8
        }
        out += "Date: ".utf8
        out += date
        out += "\r\n\r\n".utf8
        return out
    }

    /// Appends one chunk: its size in hex, CRLF, the bytes, CRLF.
    static func appendChunk(_ bytes: [UInt8], to out: inout [UInt8]) {
        out += String(bytes.count, radix: 16).utf8
        out += "\r\n".utf8
        out += bytes
        out += "\r\n".utf8
    }

    /// Whether a response with this status carries a body at all.
    static func hasBody(status: Int) -> Bool {
        status != 204 && status != 304 && !(100..<200).contains(status)
    }

    private static func isServerOwned(_ name: String) -> Bool {
        asciiCaseInsensitiveEqual(name, "content-length") || asciiCaseInsensitiveEqual(name, "transfer-encoding")
            || asciiCaseInsensitiveEqual(name, "connection") || asciiCaseInsensitiveEqual(name, "date")
    }
}

/// The `Date` header's value (IMF-fixdate, RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
enum HTTPDate {
    static func imfFixdate(epochSeconds: Int) -> [UInt8] {
        var seconds = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let text = "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        return Array(text.utf8)
    }
}
