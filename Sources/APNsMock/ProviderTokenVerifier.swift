import COpenSSL
import CShims
import Foundation
import TouchlineCore

/// Checks APNs provider tokens (ES256 JWTs) the way APNs does, independently of any client code.
///
/// Keys are loaded once; after that the verifier is immutable and OpenSSL allows concurrent
/// verification with the same `EVP_PKEY`, so one instance serves every loop.
final class ProviderTokenVerifier: @unchecked Sendable {
    /// What a valid token says.
    struct Claims: Equatable {
        var keyID: String
        var issuedAt: Int64
    }

    private let teamID: String
    private let keys: [String: OpaquePointer]

    init(teamID: String, keys: [MockAPNsConfiguration.ProviderKey]) throws(MockAPNsSetupError) {
        self.teamID = teamID
        var loaded: [String: OpaquePointer] = [:]
        do throws(MockAPNsSetupError) {
            for key in keys {
                guard loaded[key.keyID] == nil else { throw MockAPNsSetupError("key id \(key.keyID) is configured twice") }
                loaded[key.keyID] = try Self.loadVerificationKey(path: key.path)
            }
        } catch {
            loaded.values.forEach { EVP_PKEY_free($0) }
            throw error
        }
        self.keys = loaded
    }

    deinit { keys.values.forEach { EVP_PKEY_free($0) } }

    /// Verifies header, claims and signature of `token` (the text after `bearer `).
    /// Time rules (expiry, refresh rate) are the caller's, as they depend on the connection.
    func verify(_ token: Substring) throws(MockAPNsRejection) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = MockAPNsText.base64URLDecode(parts[0]),
              let claimBytes = MockAPNsText.base64URLDecode(parts[1]),
              let signature = MockAPNsText.base64URLDecode(parts[2]) else {
            throw MockAPNsRejection(.invalidProviderToken, "the provider token is not three base64url parts")
        }
        let header = try jsonObject(headerBytes, "JWT header")
        guard header["alg"].map({ $0 == .string("ES256") }) == true else {
            throw MockAPNsRejection(.invalidProviderToken, "the JWT header must have alg ES256")
        }
        guard case .string(let keyID)? = header["kid"] else {
            throw MockAPNsRejection(.invalidProviderToken, "the JWT header has no kid")
        }
        let claims = try jsonObject(claimBytes, "JWT claims")
        guard case .string(let issuer)? = claims["iss"] else {
            throw MockAPNsRejection(.invalidProviderToken, "the JWT claims have no iss")
        }
        guard case .integer(let issuedAt)? = claims["iat"] else {
            throw MockAPNsRejection(.invalidProviderToken, "the JWT claims have no integer iat")
        }
        guard issuer == teamID else {
            throw MockAPNsRejection(.invalidProviderToken, "iss \(issuer) is not the configured team id")
        }
        guard let key = keys[keyID] else {
            throw MockAPNsRejection(.invalidProviderToken, "kid \(keyID) is not a configured key")
        }
        guard signature.count == 64 else {
            throw MockAPNsRejection(.invalidProviderToken, "an ES256 signature is 64 bytes (R||S), got \(signature.count)")
        }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard Self.verifyES256(key: key, message: signingInput, rawSignature: signature) else {
            throw MockAPNsRejection(.invalidProviderToken, "the JWT signature does not verify with key \(keyID)")
        }
        return Claims(keyID: keyID, issuedAt: issuedAt)
    }

    private enum ClaimValue: Equatable {
        case string(String)
        case integer(Int64)
        case other
    }

    private func jsonObject(_ bytes: [UInt8], _ what: String) throws(MockAPNsRejection) -> [String: ClaimValue] {
        guard let document = try? JSONDocument(bytes), document.root.kind == .object else {
            throw MockAPNsRejection(.invalidProviderToken, "the \(what) is not a JSON object")
        }
        var result: [String: ClaimValue] = [:]
        for member in document.members(of: document.root) {
            let key = document.key(member)
            switch member.value.kind {
            case .string: result[key] = .string(document.string(member.value))
            case .number: result[key] = document.integer(member.value).map(ClaimValue.integer) ?? .other
            default: result[key] = .other
            }
        }
        return result
    }

    /// ECDSA P-256 / SHA-256 over `message`; JWT signatures are raw R||S, OpenSSL wants DER.
    private static func verifyES256(key: OpaquePointer, message: [UInt8], rawSignature: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        guard let signature = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = rawSignature.withUnsafeBufferPointer { raw in
            (BN_bin2bn(raw.baseAddress, 32, nil), BN_bin2bn(raw.baseAddress! + 32, 32, nil))
        }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return false
        }
        ECDSA_SIG_set0(signature, r, s)
        var der: UnsafeMutablePointer<UInt8>?
        let derLength = i2d_ECDSA_SIG(signature, &der)
        guard derLength > 0, let der else { return false }
        defer { tl_openssl_free(der) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, der, Int(derLength), message, message.count) == 1
    }

    /// Reads a P-256 key from a PEM file: a public key, or an APNs `.p8` private key (PKCS#8),
    /// whose public half is then used.
    static func loadVerificationKey(path: String) throws(MockAPNsSetupError) -> OpaquePointer {
        defer { ERR_clear_error() }
        guard let pem = FileManager.default.contents(atPath: path) else {
            throw MockAPNsSetupError("cannot read provider key file \(path)")
        }
        let key: OpaquePointer? = pem.withUnsafeBytes { raw in
            let publicBIO = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count))
            defer { BIO_free(publicBIO) }
            if let key = PEM_read_bio_PUBKEY(publicBIO, nil, nil, nil) { return key }
            let privateBIO = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count))
            defer { BIO_free(privateBIO) }
            return PEM_read_bio_PrivateKey(privateBIO, nil, nil, nil)
        }
        guard let key else {
            throw MockAPNsSetupError("\(path) holds neither a PEM public key nor a PEM (.p8) private key")
        }
        var group = [CChar](repeating: 0, count: 64)
        var groupLength = 0
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC,
              EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &group, group.count, &groupLength) == 1,
              String(decoding: group.prefix(groupLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1" else {
            EVP_PKEY_free(key)
            throw MockAPNsSetupError("\(path) is not a P-256 (ES256) key")
        }
        return key
    }
}

/// The per-connection side of provider-token checking: the token cache and APNs' time rules.
///
/// APNs verifies a token once and then only compares; so does this (a byte comparison with the
/// connection's current token), which keeps the signature check off the per-request path.
struct ProviderTokenSession {
    /// Tokens older than this are expired (403 ExpiredProviderToken).
    static let lifetime: Int64 = 3600
    /// A connection may switch to a new token at most this often (429 TooManyProviderTokenUpdates).
    static let minimumRefreshInterval: Int64 = 20 * 60
    /// How far in the future `iat` may lie (clock skew) before the token is invalid.
    static let allowedFutureSkew: Int64 = 60

    private var current: [UInt8] = []
    private var currentIssuedAt: Int64 = 0
    private var currentSince: Int64 = 0
    private var hasCurrent = false

    /// Checks the `authorization` header value (nil = header absent) at `now` (Unix seconds).
    mutating func authorize(_ header: UnsafeRawBufferPointer?, now: Int64, verifier: ProviderTokenVerifier) throws(MockAPNsRejection) {
        guard let header, !header.isEmpty else {
            throw MockAPNsRejection(.missingProviderToken, "no authorization header")
        }
        let scheme: StaticString = "bearer "
        let schemeBytes = UnsafeBufferPointer(start: scheme.utf8Start, count: scheme.utf8CodeUnitCount)
        guard header.count > schemeBytes.count,
              zip(header.prefix(schemeBytes.count), schemeBytes).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) else {
            throw MockAPNsRejection(.missingProviderToken, "the authorization header is not 'bearer <token>'")
        }
        let token = UnsafeRawBufferPointer(rebasing: header[schemeBytes.count...])
        if hasCurrent, token.count == current.count,
           current.withUnsafeBytes({ memcmp(token.baseAddress!, $0.baseAddress!, token.count) == 0 }) {
            try checkAge(issuedAt: currentIssuedAt, now: now)
            return
        }
        let claims = try verifier.verify(Substring(decoding: token, as: UTF8.self))
        guard claims.issuedAt <= now + Self.allowedFutureSkew else {
            throw MockAPNsRejection(.invalidProviderToken, "iat \(claims.issuedAt) lies in the future (now \(now))")
        }
        try checkAge(issuedAt: claims.issuedAt, now: now)
        if hasCurrent, now - currentSince < Self.minimumRefreshInterval {
            throw MockAPNsRejection(.tooManyProviderTokenUpdates,
                                    "a new provider token \(now - currentSince) s after the previous one on this connection (minimum 20 min)")
        }
        current = Array(token)
        currentIssuedAt = claims.issuedAt
        currentSince = now
        hasCurrent = true
    }

    private func checkAge(issuedAt: Int64, now: Int64) throws(MockAPNsRejection) {
        if now - issuedAt > Self.lifetime {
            throw MockAPNsRejection(.expiredProviderToken, "iat \(issuedAt) is more than one hour before now (\(now))")
        }
    }
}
