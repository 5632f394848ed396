import ChildProcesses
import Foundation
import TestSlots
import TouchlineTesting

/// A headless Chromium driven over the DevTools protocol, for tests of the dashboard in a real
/// browser: a minimal WebSocket client (RFC 6455 text frames over a blocking socket) speaking
/// JSON commands to one page.
///
/// `HeadlessChromium.executable` is nil when no Chromium is installed (tests then skip).
/// Used by one test task at a time.
final class HeadlessChromium {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The evaluated expression threw in the page.
    struct ScriptException: Error, CustomStringConvertible {
        var description: String
    }

    static let executable: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A shell around the browser, whose standard input is a lifeline: when the test process
    /// ends, even by a crash, the pipe closes and the wrapper stops the browser and removes its
    /// profile, so no Chromium outlives its test.
    private let process: ChildProcess
    private let socket: WebSocket
    private var nextID = 0

    init(width: Int = 1280, height: Int = 900) async throws {
        guard let executable = Self.executable else { throw Failure(description: "chromium is not installed") }
        let profile = NSTemporaryDirectory() + "touchline-chromium-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        // --no-sandbox: test machines and containers often run as root, where the sandbox refuses to start.
        // The rest keep background work (updates, sync, networking) off a machine busy with tests.
        let arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync", "--disable-default-apps", "--mute-audio",
                         "--remote-debugging-address=127.0.0.1",
                         "--remote-debugging-port=0", "--user-data-dir=\(profile)", "--window-size=\(width),\(height)", "about:blank"]
        process = try ChildProcess("/bin/sh", ["-c", #"profile=$1; shift; "$@" </dev/null & browser=$!; cat >/dev/null; kill $browser; wait $browser; rm -rf "$profile""#,
                                               "chromium-lifeline", profile, executable] + arguments,
                                   input: .pipe, output: .null, errors: .null)
        do {
            let port = try await Self.devToolsPort(in: profile)
            socket = try WebSocket(port: port, path: try await Self.pageTargetPath(port: port))
        } catch {
            Self.stop(process)
            throw error
        }
    }

    /// Chromium writes the port it picked (for port 0) into the profile directory.
    private static func devToolsPort(in profile: String) async throws -> Int {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: profile + "/DevToolsActivePort", encoding: .utf8),
               let line = text.split(separator: "\n").first, let port = Int(line) {
                return port
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "chromium did not open its DevTools port within 60 s")
    }

    /// The WebSocket path of the page Chromium opened (about:blank).
    private static func pageTargetPath(port: Int) async throws -> String {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let response = try GatewayTestClient(port: port, key: nil).request("GET", "/json/list")
            let targets = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [[String: Any]] ?? []
            if let page = targets.first(where: { $0["type"] as? String == "page" }), let url = page["webSocketDebuggerUrl"] as? String,
               let path = URL(string: url)?.path {
                return path
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "chromium shows no page target")
    }

    func close() {
        socket.close()
        Self.stop(process)
    }

    /// Closes the lifeline (the wrapper then stops the browser) and waits for the wrapper.
    private static func stop(_ process: ChildProcess) {
        process.input!.close()
        process.wait()
    }

    /// Sends one command and returns its `result` (events that arrive meanwhile are skipped).
    @discardableResult
    func command(_ method: String, _ parameters: [String: Any] = [:]) async throws -> [String: Any] {
        nextID += 1
        let id = nextID
        let message = Array(try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": parameters]))
        let socket = socket
        let reply = try await offThePool { () throws -> [UInt8] in
            try socket.send(message)
            while true {
                let reply = try socket.receive()
                let object = try JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any]
                if object?["id"] as? Int == id { return reply }
            }
        }
        let object = try JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any] ?? [:]
        if let error = object["error"] as? [String: Any] {
            throw Failure(description: "\(method) failed: \(error["message"] ?? error)")
        }
        return object["result"] as? [String: Any] ?? [:]
    }

    func navigate(to url: String) async throws {
        try await command("Page.navigate", ["url": url])
    }

    /// Evaluates a JavaScript expression in the page and returns its value when it is a string.
    func evaluate(_ expression: String) async throws -> String? {
        let result = try await command("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let detail = (exception["exception"] as? [String: Any])?["description"] ?? exception["text"] ?? exception
            throw ScriptException(description: "\(expression) threw: \(detail)")
        }
        return (result["result"] as? [String: Any])?["value"] as? String
    }

    /// Polls `expression` until it returns a string for which `condition` holds; returns it.
    /// An expression that throws counts as not yet (the page may be between two documents
    /// right after a navigation); the last result or exception is named if time runs out.
    @discardableResult
    func waitFor(_ what: String, _ expression: String, timeout: TimeInterval = 30, _ condition: (String) -> Bool) async throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var last = "nothing yet"
        while Date() < deadline {
            do {
                let value = try await evaluate(expression)
                if let value, condition(value) { return value }
                last = value.map { "\"\($0)\"" } ?? "not a string"
            } catch let exception as ScriptException {
                last = exception.description
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "timed out waiting for \(what); \(expression) was \(last)")
    }

    /// A PNG of the whole page.
    func screenshot() async throws -> Data {
        let result = try await command("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": true])
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
            throw Failure(description: "Page.captureScreenshot returned no image")
        }
        return data
    }
}

/// A WebSocket client connection (client frames masked, as RFC 6455 requires), blocking, with
/// a receive timeout so a silent browser fails the test instead of hanging it. Used by one
/// command at a time (`@unchecked Sendable` so that command can run on a thread of its own).
private final class WebSocket: @unchecked Sendable {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, path: String) throws {
        fd = try LoopbackSocket.connect(port: port, receiveTimeout: 30)
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        try write(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        let head = try read(through: Array("\r\n\r\n".utf8))
        let statusLine = String(decoding: head, as: UTF8.self).split(separator: "\r\n").first ?? ""
        guard statusLine.contains(" 101 ") else { throw HeadlessChromium.Failure(description: "DevTools refused the WebSocket: \(statusLine)") }
    }

    deinit { Glibc.close(fd) }

    func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sends one text frame.
    func send(_ payload: [UInt8]) throws {
        var frame: [UInt8] = [0x81]
        switch payload.count {
        case ..<126: frame.append(0x80 | UInt8(payload.count))
        case ..<65536: frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        default: frame += [0x80 | 127] + (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xff) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try write(frame)
    }

    /// The next whole text message (fragments joined); answers pings, fails on a close.
    func receive() throws -> [UInt8] {
        var message: [UInt8] = []
        while true {
            let head = try read(count: 2)
            let opcode = head[0] & 0x0f
            var length = Int(head[1] & 0x7f)
            if length == 126 {
                length = try read(count: 2).reduce(0) { $0 << 8 | Int($1) }
            } else if length == 127 {
                length = try read(count: 8).reduce(0) { $0 << 8 | Int($1) }
            }
            let mask = head[1] & 0x80 != 0 ? try read(count: 4) : nil
            var payload = try read(count: length)
            if let mask { payload = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] } }
            switch opcode {
            case 0x8: throw HeadlessChromium.Failure(description: "DevTools closed the WebSocket")
            case 0x9: continue
            case 0xA: continue
            default: message += payload
            }
            if head[0] & 0x80 != 0 { return message }
        }
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw HeadlessChromium.Failure(description: "send to DevTools: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    private func read(count: Int) throws -> [UInt8] {
        while buffer.count < count { try fill() }
        defer { buffer.removeFirst(count) }
        return Array(buffer[..<count])
    }

    private func read(through marker: [UInt8]) throws -> [UInt8] {
        while true {
            if let range = buffer.firstRange(of: marker) {
                defer { buffer.removeFirst(range.upperBound) }
                return Array(buffer[..<range.upperBound])
            }
            try fill()
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw HeadlessChromium.Failure(description: count == 0 ? "DevTools closed the connection" : "reading from DevTools: \(String(cString: strerror(errno)))")
        }
        buffer += chunk[..<count]
    }
}

/// Runs blocking socket work on a thread of its own and waits for it without blocking: Swift's
/// concurrency runs every test on as many threads as there are cores, and a test parked in
/// `recv` on one of them would slow the timing-sensitive tests running beside it.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

