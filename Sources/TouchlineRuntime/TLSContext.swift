import COpenSSL
import CShims
import TouchlineCore

/// A TLS failure with OpenSSL's own words for the cause.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }

    /// Wraps the oldest queued OpenSSL error (if any) after `what`.
    static func fromOpenSSL(_ what: String) -> TLSError {
        TLSError(what + lastOpenSSLErrorSuffix())
    }
}

/// ": <openssl error>" for the oldest queued error of this thread, or "" when there is none.
func lastOpenSSLErrorSuffix() -> String {
    let text = String(cBuffer: 256) { tl_ssl_last_error($0, 256) }
    return text.isEmpty ? "" : ": \(text)"
}

/// How a TLS endpoint is set up. HTTP/2 via ALPN and TLS 1.2 or newer are always required.
public struct TLSConfiguration: Sendable {
    /// Verify the server's certificate chain and host name (clients). Leave on outside tests.
    public var verifyPeer: Bool
    /// PEM bundle of trusted CAs; nil = the system bundle. Tests point this at their own CA.
    public var caFile: String?
    /// PEM certificate chain (servers).
    public var certificateFile: String?
    /// PEM private key (servers).
    public var privateKeyFile: String?

    public init(verifyPeer: Bool = true, caFile: String? = nil, certificateFile: String? = nil, privateKeyFile: String? = nil) {
        self.verifyPeer = verifyPeer
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
    }

    /// A client that trusts the system CA bundle.
    public static let client = TLSConfiguration()
}

/// An OpenSSL `SSL_CTX`: immutable after creation, so it is shared by every connection and loop.
public final class TLSContext: @unchecked Sendable {
    let ctx: OpaquePointer
    public let isServer: Bool
    /// The protocol a client offers via ALPN and requires the server to select; nil offers none
    /// (an HTTP/1.1 client such as webhook delivery, whose receivers need not speak ALPN).
    public let applicationProtocol: String?

    private init(ctx: OpaquePointer, isServer: Bool, applicationProtocol: String?) {
        self.ctx = ctx
        self.isServer = isServer
        self.applicationProtocol = applicationProtocol
    }

    deinit { SSL_CTX_free(ctx) }

    /// A client context offering only `h2` via ALPN (or, with `applicationProtocol: nil`, no ALPN).
    public static func client(_ configuration: TLSConfiguration = .client, applicationProtocol: String? = "h2") throws -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSError.fromOpenSSL("cannot create TLS context") }
        let context = TLSContext(ctx: ctx, isServer: false, applicationProtocol: applicationProtocol)
        try context.applyCommon()
        if configuration.verifyPeer {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
            if let caFile = configuration.caFile {
                guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                    throw TLSError.fromOpenSSL("cannot load CA file \(caFile)")
                }
            } else if SSL_CTX_set_default_verify_paths(ctx) != 1 {
                throw TLSError.fromOpenSSL("cannot load the system CA bundle")
            }
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        }
        guard let applicationProtocol else { return context }
        let alpn = [UInt8(applicationProtocol.utf8.count)] + Array(applicationProtocol.utf8)
        guard SSL_CTX_set_alpn_protos(ctx, alpn, UInt32(alpn.count)) == 0 else {
            throw TLSError.fromOpenSSL("cannot set ALPN")
        }
        return context
    }

    /// A server context that answers ALPN with `h2` only (or, with `negotiatingH2: false`,
    /// ignores ALPN: an HTTP/1.1 server such as a test's webhook receiver).
    public static func server(_ configuration: TLSConfiguration, negotiatingH2: Bool = true) throws -> TLSContext {
        guard let cert = configuration.certificateFile, let key = configuration.privateKeyFile else {
            throw TLSError("a TLS server needs a certificate file and a private key file")
        }
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError.fromOpenSSL("cannot create TLS context") }
        let context = TLSContext(ctx: ctx, isServer: true, applicationProtocol: negotiatingH2 ? "h2" : nil)
        try context.applyCommon()
        guard SSL_CTX_use_certificate_chain_file(ctx, cert) == 1 else {
            throw TLSError.fromOpenSSL("cannot load certificate \(cert)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError.fromOpenSSL("cannot load private key \(key)")
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSError.fromOpenSSL("private key \(key) does not match certificate \(cert)")
        }
        if negotiatingH2 { tl_ssl_ctx_select_alpn_h2(ctx) }
        return context
    }

    private func applyCommon() throws {
        guard tl_ssl_ctx_set_min_tls12(ctx) == 1 else { throw TLSError.fromOpenSSL("cannot require TLS 1.2") }
        tl_ssl_ctx_set_release_buffers(ctx)
    }

    /// A new `SSL` for one connection; for clients, set up for SNI and host-name verification of `host`.
    func makeSSL(verifyingHost host: String?) throws -> OpaquePointer {
        guard let ssl = SSL_new(ctx) else { throw TLSError.fromOpenSSL("cannot create TLS session") }
        if let host, !isServer {
            if isIPAddress(host) {
                let param = SSL_get0_param(ssl)
                X509_VERIFY_PARAM_set1_ip_asc(param, host)
            } else {
                _ = tl_ssl_set_sni(ssl, host)
                SSL_set1_host(ssl, host)
            }
        }
        return ssl
    }
}

/// True for a numeric IPv4 or IPv6 address, which must be verified against IP SANs and not sent as SNI.
func isIPAddress(_ host: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
}

#if canImport(Glibc)
import Glibc
#endif

extension String {
    /// Reads a NUL-terminated string that `fill` writes into a fresh buffer of `capacity` bytes.
    init(cBuffer capacity: Int, _ fill: (UnsafeMutablePointer<CChar>) -> Void) {
        self = withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
            buffer.initialize(repeating: 0)
            fill(buffer.baseAddress!)
            return String(cString: buffer.baseAddress!)
        }
    }
}
