import ChildProcesses
import Foundation
import TouchlineRuntime

/// A throw-away CA and a server certificate for `localhost` / `127.0.0.1`, made once per test
/// run with the `openssl` command-line tool, plus a document root for `nghttpd`.
struct TestPKI: Sendable {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var certificateFile: String { directory + "/server.pem" }
    var privateKeyFile: String { directory + "/server.key" }
    var documentRoot: String { directory + "/htdocs" }
    static let helloBody = "hello from the test server\n"

    static let shared: TestPKI = {
        do {
            return try TestPKI()
        } catch {
            fatalError("cannot create test certificates: \(error)")
        }
    }()

    private init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-h2-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/htdocs", withIntermediateDirectories: true)
        try TestPKI.helloBody.write(toFile: documentRoot + "/hello.txt", atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try runTool("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                    "-subj", "/CN=Touchline Test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign"], in: directory)
        try runTool("/usr/bin/openssl", ["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], in: directory)
        try """
            subjectAltName=DNS:localhost,IP:127.0.0.1
            basicConstraints=CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth

            """.write(toFile: directory + "/server.ext", atomically: true, encoding: .utf8)
        try runTool("/usr/bin/openssl", ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", "server.pem", "-days", "2", "-extfile", "server.ext"], in: directory)
    }

    /// A client context trusting the test CA.
    func clientContext() throws -> TLSContext {
        try TLSContext.client(TLSConfiguration(caFile: caFile))
    }

    func serverContext() throws -> TLSContext {
        try TLSContext.server(TLSConfiguration(certificateFile: certificateFile, privateKeyFile: privateKeyFile))
    }
}

struct ToolFailure: Error, CustomStringConvertible {
    var description: String
}

/// Runs a command to completion; throws with its output when it fails.
func runTool(_ path: String, _ arguments: [String], in directory: String? = nil) throws {
    let (termination, text) = try ChildProcess.run(path, arguments, directory: directory)
    guard termination == .exited(0) else {
        throw ToolFailure(description: "\(path) \(arguments.joined(separator: " ")) failed (\(termination)): \(text)")
    }
}
