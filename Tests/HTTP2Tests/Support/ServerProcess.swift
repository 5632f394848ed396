import ChildProcesses
import Foundation
import TestSlots
#if canImport(Glibc)
import Glibc
#endif

/// A server run as a subprocess for a test (`nghttpd`, `openssl s_server`), on 127.0.0.1.
final class ServerProcess: @unchecked Sendable {
    let port: Int
    private let executable: String
    private let process: ChildProcess

    private init(executable: String, arguments: [String], port: Int) throws {
        self.port = port
        self.executable = executable
        process = try ChildProcess(executable, arguments, output: .null, errors: .null)
        try waitUntilListening()
    }

    deinit { kill() }

    /// Debian's `nghttpd` serving ``TestPKI/documentRoot``. With `echoUpload` it answers POST with
    /// the request body (buffered in a temporary file: slow); without, with the file at the path.
    static func nghttpd(port: Int? = nil, address: String = "127.0.0.1", maxConcurrentStreams: Int = 100,
                        echoUpload: Bool = true, extraArguments: [String] = []) throws -> ServerProcess {
        let pki = TestPKI.shared
        let port = try port ?? LoopbackSocket.freePort()
        return try ServerProcess(executable: "/usr/sbin/nghttpd",
                                 arguments: ["-a", address, "-d", pki.documentRoot, "-m", "\(maxConcurrentStreams)"]
                                     + (echoUpload ? ["--echo-upload"] : []) + extraArguments
                                     + ["\(port)", pki.privateKeyFile, pki.certificateFile],
                                 port: port)
    }

    /// `openssl s_server` answering ALPN with `alpn` only (nil: no ALPN support at all).
    static func opensslServer(alpn: String?) throws -> ServerProcess {
        let pki = TestPKI.shared
        let port = try LoopbackSocket.freePort()
        return try ServerProcess(executable: "/usr/bin/openssl",
                                 arguments: ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", pki.certificateFile,
                                             "-key", pki.privateKeyFile, "-www"] + (alpn.map { ["-alpn", $0] } ?? []),
                                 port: port)
    }

    /// Kills the server at once (SIGKILL), as a crash would; nghttpd does not exit on SIGTERM.
    func kill() {
        guard process.isRunning else { return }
        process.signal(SIGKILL)
        process.wait()
    }


    private func waitUntilListening() throws {
        for _ in 0..<250 {
            if LoopbackSocket.canConnect(port: port) { return }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        kill()
        throw ToolFailure(description: "\(executable) did not start listening on port \(port)")
    }
}
