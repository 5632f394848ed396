import COpenSSL

/// HMAC-SHA256 through OpenSSL (`EVP_Q_mac`): the webhook signature's MAC.
///
/// The only C interop the webhooks need; what is signed and how the header reads is
/// `WebhookSignature` in the core.
public enum HMACSHA256 {
    public static let length = 32

    /// The 32-byte MAC of `message` under `key`.
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        var written = 0
        let result = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                out.withUnsafeMutableBytes { out in
                    EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, key.baseAddress, key.count,
                              message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                              out.baseAddress?.assumingMemoryBound(to: UInt8.self), length, &written)
                }
            }
        }
        // Fails only without SHA-256 in the OpenSSL build, which TLS 1.2 itself needs.
        precondition(result != nil && written == length, "OpenSSL could not compute HMAC-SHA256")
        return out
    }
}
