import COpenSSL
import CShims
#if canImport(Glibc)
import Glibc
#endif

/// A P-256 private key that signs the way JWS ES256 wants: ECDSA over SHA-256, with the signature
/// as the raw 64 bytes R || S rather than OpenSSL's DER encoding.
///
/// Immutable after loading and every signature uses its own digest context, so one key may sign
/// on any thread (hence `@unchecked Sendable`).
final class ES256Key: @unchecked Sendable {
    private let pkey: OpaquePointer

    /// Loads the PEM key in `path`; errors name the file and the cause.
    convenience init(pemFile path: String) throws(APNsConfigurationError) {
        try self.init(pem: try readWholeFile(path), source: path)
    }

    /// Parses a PEM private key; `source` names it in error messages (a path or "environment").
    init(pem: [UInt8], source: String) throws(APNsConfigurationError) {
        let loaded: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            // A callback that refuses to supply a passphrase: without one OpenSSL would prompt
            // on the terminal and hang a server started without one.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let pkey = loaded else { throw Self.diagnose(pem, source: source, openSSLCause: takeOpenSSLError()) }
        ERR_clear_error()
        if let found = describeIfNotP256(pkey) {
            EVP_PKEY_free(pkey)
            throw .keyNotP256(path: source, found: found)
        }
        self.pkey = pkey
    }

    /// Says what is wrong with a PEM text OpenSSL could not load a key from, by reading its first
    /// block's label: OpenSSL 3 itself only reports a generic "unsupported".
    private static func diagnose(_ pem: [UInt8], source: String, openSSLCause: String) -> APNsConfigurationError {
        var name: UnsafeMutablePointer<CChar>?
        var header: UnsafeMutablePointer<CChar>?
        var data: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = pem.withUnsafeBytes { bytes -> Int32 in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return 0 }
            defer { BIO_free(bio) }
            return PEM_read_bio(bio, &name, &header, &data, &length)
        }
        defer {
            tl_openssl_free(name)
            tl_openssl_free(header)
            tl_openssl_free(data)
        }
        guard status == 1, let name else {
            let cause = takeOpenSSLError()
            return .keyMalformed(path: source, cause: cause.contains("no start line")
                ? "no PEM block; expected -----BEGIN PRIVATE KEY-----" : "unreadable PEM block: \(cause)")
        }
        let label = String(cString: name)
        if label == "ENCRYPTED PRIVATE KEY" || header.map({ String(cString: $0).contains("ENCRYPTED") }) == true {
            return .keyEncrypted(path: source)
        }
        guard label.hasSuffix("PRIVATE KEY") else { return .keyMalformed(path: source, cause: "it holds a \(label), not a private key") }
        return .keyMalformed(path: source, cause: "the \(label) block does not hold a valid key: \(openSSLCause)")
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Signs `message` with ECDSA P-256 / SHA-256 and returns R || S, 32 bytes each.
    func sign(_ message: [UInt8]) throws(APNsConfigurationError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw .signingFailed(takeOpenSSLError())
        }
        var der = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(pkey)))
        var derLength = der.count
        guard EVP_DigestSign(context, &der, &derLength, message, message.count) == 1 else {
            throw .signingFailed(takeOpenSSLError())
        }
        return try Self.rawSignature(fromDER: der, length: derLength)
    }

    /// Converts an ASN.1 `ECDSA-Sig-Value` (SEQUENCE of INTEGER r, s) to fixed-width R || S.
    private static func rawSignature(fromDER der: [UInt8], length: Int) throws(APNsConfigurationError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, length)
        }
        guard let signature = parsed else { throw .signingFailed("OpenSSL produced an unreadable signature") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { out in
            (BN_bn2binpad(r, out.baseAddress, 32), BN_bn2binpad(s, out.baseAddress! + 32, 32))
        }
        guard written == (32, 32) else { throw .signingFailed("signature integers do not fit in 32 bytes") }
        return raw
    }
}

/// nil for an EC key on prime256v1; otherwise what the key is, for the error message.
private func describeIfNotP256(_ pkey: OpaquePointer) -> String? {
    let typeName = EVP_PKEY_get0_type_name(pkey).map { String(cString: $0) } ?? "unknown key type"
    let bits = EVP_PKEY_get_bits(pkey)
    guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else { return "\(typeName), \(bits) bits" }
    var name = [CChar](repeating: 0, count: 80)
    var nameLength = 0
    guard EVP_PKEY_get_group_name(pkey, &name, name.count, &nameLength) == 1 else {
        ERR_clear_error()
        return "EC key on an unnamed curve, \(bits) bits"
    }
    let curve = String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return OBJ_sn2nid(curve) == NID_X9_62_prime256v1 ? nil : "EC key on curve \(curve), \(bits) bits"
}

/// The oldest queued OpenSSL error of this thread ("" when none); clears the queue.
private func takeOpenSSLError() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    tl_ssl_last_error(&buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Reads a whole file with POSIX calls, so that the error says "No such file or directory" and
/// not a generic "cannot open".
private func readWholeFile(_ path: String) throws(APNsConfigurationError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw .keyFileUnreadable(path: path, cause: String(cString: strerror(errno))) }
    defer { close(fd) }
    var contents: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n < 0 {
            if errno == EINTR { continue }
            throw .keyFileUnreadable(path: path, cause: String(cString: strerror(errno)))
        }
        if n == 0 { return contents }
        guard contents.count + n <= 1 << 20 else {
            throw .keyFileUnreadable(path: path, cause: "larger than 1 MiB; an APNs key is a few hundred bytes")
        }
        contents += chunk[0..<n]
    }
}
