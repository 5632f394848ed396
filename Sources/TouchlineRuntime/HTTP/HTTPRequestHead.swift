/// One header field line as received: the name as sent (compare it case-insensitively), the
/// value without its surrounding whitespace.
public struct HTTPHeaderField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// How the body of a request is delimited (RFC 9112 §6.3).
public enum HTTPBodyFraming: Sendable, Equatable {
    /// Neither `Content-Length` nor `Transfer-Encoding`: no body.
    case none
    /// `Content-Length`: exactly this many bytes.
    case length(UInt64)
    /// `Transfer-Encoding: chunked`: chunks until the last one; the size is known only at the end.
    case chunked
}

/// A request head the parser accepted: request line, header fields and what they mean for the
/// connection. Handed to the server's admission hook before any body byte is read.
public struct HTTPRequestHead: Sendable, Equatable {
    /// The method token as sent (case-sensitive, RFC 9110 §9.1).
    public var method: String
    /// The target in origin form (`/path?query`); an absolute-form target is reduced to it.
    public var target: String
    /// 1 for HTTP/1.1, 0 for HTTP/1.0.
    public var minorVersion: Int
    /// Every header field line, in order.
    public var fields: [HTTPHeaderField]
    public var framing: HTTPBodyFraming
    /// False when the client asked to close (`Connection: close`, or HTTP/1.0 without
    /// `Connection: keep-alive`).
    public var keepAlive: Bool
    /// `Expect: 100-continue`: the client waits for an interim 100 before sending the body.
    public var expectsContinue: Bool

    /// True when body bytes follow the head (a `Content-Length` above 0, or chunked).
    public var hasBody: Bool {
        switch framing {
        case .none, .length(0): false
        case .length, .chunked: true
        }
    }

    /// The first value of a header field (name compared case-insensitively), or nil.
    public func header(_ name: String) -> String? {
        fields.first { asciiCaseInsensitiveEqual($0.name, name) }?.value
    }
}

/// Compares two strings ignoring ASCII case, without allocating.
func asciiCaseInsensitiveEqual(_ a: String, _ b: String) -> Bool {
    a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
}

@inline(__always)
func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
}
