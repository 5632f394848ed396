/// A device token as logs may show it: its first eight characters and an ellipsis.
///
/// Redaction happens on construction: the value keeps only the prefix, so no formatting,
/// reflection or `dump` of it can reveal the whole token (a device token is a credential for
/// pushing to one device). The prefix is enough to find the token in the registry. A value
/// shorter than 16 characters (never a real token) keeps only its first half.
public struct RedactedToken: Sendable, Hashable, CustomStringConvertible {
    /// At most eight characters of the token.
    public let prefix: String

    public init(_ token: String) {
        prefix = String(token.prefix(min(8, token.count / 2)))
    }

    /// `"0a1b2c3d…"`
    public var description: String { prefix + "…" }
}
