/// A webhook endpoint's address: `http://` or `https://`, a host, an optional port and a path.
///
/// Parsed strictly at configuration time, so that delivery never meets a URL it cannot use:
/// no other scheme, no user name or password (a secret in a URL ends up in logs; the signing
/// secret is the credential), no fragment, no spaces or control characters.
public struct WebhookURL: Sendable, Equatable, CustomStringConvertible {
    public var isTLS: Bool
    public var host: String
    public var port: Int
    /// The request target: the path (at least `/`) and the query.
    public var target: String

    /// The URL or a predicate saying what is wrong with it ("must start with http:// or https://").
    public init(parsing text: String) throws(WebhookURLError) {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            isTLS = true
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            isTLS = false
            rest = text.dropFirst(7)
        } else {
            throw WebhookURLError("must start with http:// or https://, got \"\(Self.shown(text))\"")
        }
        guard text.utf8.count <= 2048 else { throw WebhookURLError("must be at most 2048 bytes") }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else {
            throw WebhookURLError("must be printable ASCII without spaces (percent-encode the rest)")
        }
        guard !text.contains("#") else { throw WebhookURLError("must not have a fragment ('#')") }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains("@") else {
            throw WebhookURLError("must not carry a user name or password; the receiver checks the signature instead")
        }
        var hostPart = Substring(authority)
        var portValue = isTLS ? 443 : 80
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { throw WebhookURLError("has an unclosed '[' in its host") }
            let after = hostPart[hostPart.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()), (1...65_535).contains(number) else {
                    throw WebhookURLError("has an invalid port")
                }
                portValue = number
            }
            hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
        } else if let colon = hostPart.lastIndex(of: ":") {
            guard let number = Int(hostPart[hostPart.index(after: colon)...]), (1...65_535).contains(number) else {
                throw WebhookURLError("has an invalid port")
            }
            portValue = number
            hostPart = hostPart[..<colon]
        }
        guard !hostPart.isEmpty else { throw WebhookURLError("has no host") }
        host = String(hostPart)
        port = portValue
        let path = rest[authorityEnd...]
        target = path.isEmpty ? "/" : (path.hasPrefix("?") ? "/" + path : String(path))
    }

    /// `host:port` as the `Host` header and logs show it.
    public var authority: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return (isTLS && port == 443) || (!isTLS && port == 80) ? shownHost : "\(shownHost):\(port)"
    }

    public var description: String { (isTLS ? "https://" : "http://") + authority + target }

    private static func shown(_ text: String) -> String { text.count > 40 ? String(text.prefix(40)) + "…" : text }
}

/// Why a webhook URL is refused, as a predicate the caller puts the field's name in front of.
public struct WebhookURLError: Error, Sendable, Equatable {
    public var predicate: String
    public init(_ predicate: String) { self.predicate = predicate }
}
