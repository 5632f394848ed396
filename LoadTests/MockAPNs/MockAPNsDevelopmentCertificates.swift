import Foundation

/// Throwaway TLS material for running the mock locally, made with the `openssl` command.
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

    /// Writes `ca.pem`, `ca.key`, `server.pem` and `server.key` into `directory` (created if needed).
    public static func generate(in directory: String, validDays: Int = 30) throws(MockAPNsSetupError) -> Files {
        try createDirectory(directory)
        let path = { (name: String) in (directory as NSString).appendingPathComponent(name) }
        let files = Files(caFile: path("ca.pem"), certificateFile: path("server.pem"), privateKeyFile: path("server.key"))
        let extensions = path("server.ext")
        do {
            try """
            basicConstraints = critical, CA:FALSE
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1

            """.write(toFile: extensions, atomically: true, encoding: .utf8)
        } catch {
            throw MockAPNsSetupError("cannot write \(extensions): \(error.localizedDescription)")
        }
        try OpenSSLCommand.run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                "-keyout", path("ca.key"), "-out", files.caFile, "-days", String(validDays),
                                "-subj", "/CN=Touchline mock APNs development CA",
                                "-addext", "basicConstraints=critical,CA:TRUE",
                                "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try OpenSSLCommand.run(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                "-keyout", files.privateKeyFile, "-out", path("server.csr"), "-subj", "/CN=localhost"])
        try OpenSSLCommand.run(["x509", "-req", "-in", path("server.csr"), "-CA", files.caFile, "-CAkey", path("ca.key"),
                                "-CAcreateserial", "-out", files.certificateFile, "-days", String(validDays),
                                "-extfile", extensions])
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
        try OpenSSLCommand.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", files.privateKeyFile])
        try OpenSSLCommand.run(["pkey", "-in", files.privateKeyFile, "-pubout", "-out", files.publicKeyFile])
        return files
    }
}

/// Runs `openssl` with arguments, turning a failure into an error with openssl's own message.
enum OpenSSLCommand {
    static func run(_ arguments: [String]) throws(MockAPNsSetupError) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw MockAPNsSetupError("cannot run openssl: \(error.localizedDescription)")
        }
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: message, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
            throw MockAPNsSetupError("openssl \(arguments.first ?? "") failed (status \(process.terminationStatus)): \(text)")
        }
    }
}
