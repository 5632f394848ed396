import COpenSSL

/// SHA-256 through OpenSSL: API keys are compared by their digests (equal lengths, so a
/// comparison cannot stop early on a length), and idempotency keys store a digest of the
/// request they were first used with instead of the request itself.
public enum SHA256 {
    /// The algorithm, fetched from OpenSSL's default provider once. `EVP_sha256()` names it
    /// without fetching, so every digest made with it fetched it again (a provider lookup under
    /// a lock): with an API key's digest on every request, a twentieth of the ingest loop's time.
    /// A fetched `EVP_MD` is immutable and may be shared by threads.
    nonisolated(unsafe) private static let algorithm: OpaquePointer = {
        guard let fetched = EVP_MD_fetch(nil, "SHA256", nil) else { preconditionFailure("OpenSSL has no SHA-256") }
        return fetched
    }()

    /// The 32-byte digest of `bytes`.
    public static func digest<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let input = Array(bytes)
        let ok = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                EVP_Digest(source.baseAddress, source.count, target.baseAddress, &length, algorithm, nil)
            }
        }
        // Only an allocation failure inside OpenSSL makes SHA-256 fail; nothing can go on then.
        precondition(ok == 1 && length == 32, "OpenSSL could not compute a SHA-256 digest")
        return output
    }

    /// Lowercase hexadecimal of `digest(bytes)`.
    public static func hex<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest(bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// True when `a` and `b` hold the same bytes, in time that depends only on their lengths:
    /// every byte is compared, with no early exit on the first difference.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
