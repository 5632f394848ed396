/// The `Touchline-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
///
/// The timestamp is signed with the body so a receiver can refuse replays older than its
/// tolerance; `v1` names the scheme so a later one can be sent beside it during a migration.
/// The MAC itself is computed at the edge (OpenSSL); this type only says what is signed and how
/// the header reads, so receivers' recipes (docs/api.md) and the tests share one definition.
public enum WebhookSignature {
    public static let headerName = "Touchline-Signature"

    /// The bytes the MAC covers.
    public static func signedPayload(timestamp: Int64, body: [UInt8]) -> [UInt8] {
        Array("\(timestamp).".utf8) + body
    }

    /// The header value for a MAC over ``signedPayload(timestamp:body:)``.
    public static func headerValue(timestamp: Int64, mac: [UInt8]) -> String {
        "t=\(timestamp),v1=\(hex(mac))"
    }

    /// Lowercase hexadecimal.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
