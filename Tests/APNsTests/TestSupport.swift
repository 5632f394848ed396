import ChildProcesses
import APNs
import CShims
import Foundation
import HTTP2
import TouchlineRuntime

/// A fresh directory under the system temp dir, removed when released.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("apns-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        try contents.write(toFile: file(name), atomically: true, encoding: .utf8)
        return file(name)
    }
}

struct CommandFailed: Error, CustomStringConvertible {
    var description: String
}

/// Runs the `openssl` command-line tool, an implementation independent of the code under test.
@discardableResult
func openssl(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let (termination, output) = try ChildProcess.run("openssl", arguments)
    return (termination.status, output)
}

/// Test keys: P-256 `.p8` keys are made in-process (many tests need one, and every child
/// process started from a busy test process is a risk); the rarer wrong kinds of key come from
/// the `openssl` tool, as an operator would make them.
enum TestKeys {
    static func p256(in directory: TemporaryDirectory, name: String = "AuthKey.p8") throws -> String {
        let path = directory.file(name)
        var message = [CChar](repeating: 0, count: 256)
        guard tl_dev_write_p256_key(path, nil, &message, message.count) == 0 else {
            throw CommandFailed(description: "making a P-256 key failed: " + message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return path
    }

    static func p384(in directory: TemporaryDirectory) throws -> String {
        try generate(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"], directory.file("p384.p8"))
    }

    static func rsa(in directory: TemporaryDirectory) throws -> String {
        try generate(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], directory.file("rsa.p8"))
    }

    private static func generate(_ options: [String], _ path: String) throws -> String {
        let result = try openssl(["genpkey"] + options + ["-out", path])
        guard result.status == 0 else { throw CommandFailed(description: "openssl genpkey failed: \(result.output)") }
        return path
    }
}

enum Base64URLDecoding {
    /// Decodes base64url without padding; nil on a character outside the alphabet or padding.
    static func decode(_ text: Substring) -> [UInt8]? {
        guard !text.contains("=") else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}

let keyID = "ABC123DEFG"
let teamID = "TEAM456789"
let bundleID = "com.example.sports"
let hexToken = String(repeating: "0123456789abcdef", count: 4)

/// An `HTTP2RequestSender` that records requests and answers each with `respond`, on its loop,
/// after the call returns (like a real connection). Loop-confined like the real senders.
final class FakeSender: HTTP2RequestSender, @unchecked Sendable {
    let loop: EventLoop
    private(set) var requests: [HTTP2Request] = []
    private let respond: (HTTP2Request, Int) -> Result<HTTP2Response, HTTP2RequestError>

    /// `respond` gets the request and its 0-based index among the requests this sender saw.
    init(loop: EventLoop, respond: @escaping (HTTP2Request, Int) -> Result<HTTP2Response, HTTP2RequestError>) {
        self.loop = loop
        self.respond = respond
    }

    func send(_ request: HTTP2Request, completion: @escaping (Result<HTTP2Response, HTTP2RequestError>) -> Void) {
        precondition(loop.inEventLoop, "sender used off its loop")
        let answer = respond(request, requests.count)
        requests.append(request)
        let box = UncheckedSendable(completion)
        loop.execute { box.value(answer) }
    }
}

/// Carries a loop-confined value through `EventLoop.execute`, which runs on the same loop.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Runs `body` with a started loop and stops the loop afterwards.
func withLoop<T>(_ body: (EventLoop) async throws -> T) async rethrows -> T {
    let loop = EventLoop.start(name: "apns-test")
    defer { loop.stopAndWait() }
    return try await body(loop)
}

func errorResponse(_ status: Int, _ reason: String, headers: [HTTP2Header] = []) -> HTTP2Response {
    HTTP2Response(status: status, headers: headers, body: Array(#"{"reason":"\#(reason)"}"#.utf8))
}

extension Array where Element == UInt8 {
    var text: String { String(decoding: self, as: UTF8.self) }
}
