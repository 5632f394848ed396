import CShims
import Foundation

/// Throwaway TLS material for running the mock locally, made in-process with OpenSSL.
///
/// A fresh CA signs a server certificate for `localhost`, `127.0.0.1` and `::1`; clients trust
/// the CA file only. Nothing here is meant for production.
public enum MockAPNsDevelopmentCertificates {
    /// Paths of the generated files.
    public struct Files: Sendable {
        /// The CA certificate clients should trust.
        public var caFile: String
        /// The server certificate (PEM), signed by the CA.
        public var certificateFile: String
        /// The server's private key (PEM).
        public var privateKeyFile: String
    }

    /// Writes `ca.pem`, `server.pem` and `server.key` into `directory` (created if needed). The
    /// CA's own key is never written, so nothing else can be signed with it.
    public static func generate(in directory: String, validDays: Int = 30) throws(MockAPNsSetupError) -> Files {
        try createDirectory(directory)
        let path = { (name: String) in (directory as NSString).appendingPathComponent(name) }
        let files = Files(caFile: path("ca.pem"), certificateFile: path("server.pem"), privateKeyFile: path("server.key"))
        try DevelopmentCredential.make("the development certificates") { error, length in
            tl_dev_write_tls_files(files.caFile, files.certificateFile, files.privateKeyFile, Int32(validDays), error, length)
        }
        return files
    }

    /// A new private directory under the system's temporary directory.
    public static func temporaryDirectory() throws(MockAPNsSetupError) -> String {
        let path = (NSTemporaryDirectory() as NSString).appendingPathComponent("touchline-mock-apns-\(UUID().uuidString.prefix(8))")
        try createDirectory(path)
        return path
    }

    static func createDirectory(_ path: String) throws(MockAPNsSetupError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw MockAPNsSetupError("cannot create directory \(path): \(error.localizedDescription)")
        }
    }
}

/// An APNs-style provider signing key for tests and demos: a P-256 key in a `.p8` file
/// (PKCS#8 PEM, the format Apple hands out) plus its public half.
public enum MockAPNsProviderKeyFiles {
    public struct Files: Sendable {
        /// `AuthKey_<keyID>.p8`: the private key, PKCS#8 PEM.
        public var privateKeyFile: String
        /// `AuthKey_<keyID>.pub.pem`: the public key the mock verifies with.
        public var publicKeyFile: String
    }

    /// Generates the key pair into `directory` (created if needed).
    public static func generate(keyID: String, in directory: String) throws(MockAPNsSetupError) -> Files {
        try MockAPNsDevelopmentCertificates.createDirectory(directory)
        let base = (directory as NSString).appendingPathComponent("AuthKey_\(keyID)")
        let files = Files(privateKeyFile: base + ".p8", publicKeyFile: base + ".pub.pem")
        try DevelopmentCredential.make("the provider key \(keyID)") { error, length in
            tl_dev_write_p256_key(files.privateKeyFile, files.publicKeyFile, error, length)
        }
        return files
    }
}

/// Runs one of the C generators of development credentials, turning its failure into an error.
enum DevelopmentCredential {
    static func make(_ what: String, _ generate: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws(MockAPNsSetupError) {
        var message = [CChar](repeating: 0, count: 512)
        let status = message.withUnsafeMutableBufferPointer { generate($0.baseAddress!, $0.count) }
        guard status == 0 else {
            throw MockAPNsSetupError("cannot make \(what): " + message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
    }
}
