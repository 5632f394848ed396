import ChildProcesses
import Foundation

/// Runs a command and returns its exit status and output (written to files, so large outputs cannot block).
enum Command {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ executable: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> Output {
        let result = try ChildProcess.runSeparately(executable, arguments, input: stdin.map { .bytes(Data($0)) } ?? .null)
        return Output(status: result.termination.status, stdout: result.output, stderr: result.errors)
    }
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

struct CommandFailed: Error, CustomStringConvertible {
    var description: String
}

/// Signs APNs provider tokens with the `openssl` command (independent of any Swift signer):
/// `openssl dgst -sha256 -sign` gives a DER ECDSA signature, which JWS wants as raw R||S.
enum ProviderTokenSigner {
    static func sign(keyFile: String, keyID: String, teamID: String, issuedAt: Int64) throws -> String {
        let header = base64URL(Array("{\"alg\":\"ES256\",\"kid\":\"\(keyID)\"}".utf8))
        let claims = base64URL(Array("{\"iss\":\"\(teamID)\",\"iat\":\(issuedAt)}".utf8))
        let signingInput = header + "." + claims
        let directory = NSTemporaryDirectory() + "mockapns-sign-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = try Command.run("openssl", ["dgst", "-sha256", "-sign", keyFile, "-out", directory + "/sig"], stdin: Array(signingInput.utf8))
        guard output.status == 0, let der = FileManager.default.contents(atPath: directory + "/sig") else {
            throw CommandFailed(description: "openssl dgst failed: \(output.stderr)")
        }
        return signingInput + "." + base64URL(try rawSignature(fromDER: Array(der)))
    }

    /// SEQUENCE { INTEGER r, INTEGER s } -> 32-byte r || 32-byte s.
    static func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
        var index = 2
        if der.count > 1, der[1] & 0x80 != 0 { index += Int(der[1] & 0x7f) }
        var raw: [UInt8] = []
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02 else { throw CommandFailed(description: "not a DER ECDSA signature") }
            let length = Int(der[index + 1])
            var integer = Array(der[(index + 2)..<(index + 2 + length)])
            while integer.count > 32, integer.first == 0 { integer.removeFirst() }
            raw += [UInt8](repeating: 0, count: 32 - integer.count) + integer
            index += 2 + length
        }
        return raw
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// One HTTP/2 request for curl.
struct CurlRequest {
    var url: String
    var method: String
    var headers: [(String, String)]
    var body: [UInt8]?
}

/// What curl received.
struct CurlResponse: CustomStringConvertible {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The `reason` of an APNs error body.
    var reason: String? {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["reason"] as? String
    }

    var description: String {
        "\(status) \(bodyText) \(header("x-mock-apns-detail") ?? "")"
    }
}

/// Drives the mock with `curl --http2`; requests of one call share one connection (`--next`).
enum Curl {
    static func send(_ requests: [CurlRequest], caFile: String) throws -> [CurlResponse] {
        let directory = NSTemporaryDirectory() + "mockapns-curl-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var arguments: [String] = []
        for (i, request) in requests.enumerated() {
            if i > 0 { arguments.append("--next") }
            arguments += ["--http2", "--silent", "--show-error", "--cacert", caFile, "-X", request.method,
                          "-D", "\(directory)/headers\(i)", "-o", "\(directory)/body\(i)"]
            for (name, value) in request.headers { arguments += ["-H", "\(name): \(value)"] }
            if let body = request.body {
                let path = "\(directory)/request\(i)"
                try writeFile(path, body)
                arguments += ["--data-binary", "@\(path)", "-H", "content-type: application/json"]
            }
            arguments.append(request.url)
        }
        let output = try Command.run("curl", arguments)
        guard output.status == 0 else { throw CommandFailed(description: "curl failed (\(output.status)): \(output.stderr)") }
        return try (0..<requests.count).map { i in
            let headerText = try String(contentsOfFile: "\(directory)/headers\(i)", encoding: .utf8)
            var lines = headerText.split(separator: "\r\n").map(String.init)
            guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
                throw CommandFailed(description: "no status line in \(headerText)")
            }
            lines.removeFirst()
            let headers = lines.compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let body = FileManager.default.contents(atPath: "\(directory)/body\(i)").map { Array($0) } ?? []
            return CurlResponse(status: status, headers: headers, body: body)
        }
    }
}

/// Runs `nghttp -v` (frame-level trace) against the mock.
enum NGHTTP {
    static func trace(urls: [String], headers: [(String, String)], body: [UInt8]?, extra: [String] = []) throws -> String {
        let directory = NSTemporaryDirectory() + "mockapns-nghttp-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var arguments = ["-v", "-n", "-y", "--no-dep"] + extra
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if let body {
            try writeFile(directory + "/body", body)
            arguments += ["-d", directory + "/body"]
        }
        let output = try Command.run("nghttp", arguments + urls)
        return output.stdout + output.stderr
    }
}
