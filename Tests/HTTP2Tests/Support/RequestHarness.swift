import Foundation
import HTTP2
import TestSlots
import TouchlineCore
import TouchlineRuntime

typealias RequestResult = Result<HTTP2Response, HTTP2RequestError>

/// What came back for a batch of requests.
struct Outcome: Sendable {
    /// One result per request, in request order.
    var results: [RequestResult]
    /// Completions beyond the first for some request (must be 0).
    var duplicateCompletions: Int
    /// Completions that did not run on the sender's loop (must be 0).
    var offLoopCompletions: Int

    var successes: [HTTP2Response] { results.compactMap { try? $0.get() } }
    var failures: [HTTP2RequestError] {
        results.compactMap { if case .failure(let error) = $0 { error } else { nil } }
    }
}

/// Collects completions on the loop and resumes the waiting test once all have arrived (or the
/// time limit has passed, so a broken client fails the test instead of hanging it).
private final class Collector: @unchecked Sendable {
    private let loop: EventLoop
    private var results: [RequestResult?]
    private var remaining: Int
    private var duplicates = 0
    private var offLoop = 0
    private var continuation: CheckedContinuation<Outcome, Error>?
    private var timer: LoopTimer?

    init(loop: EventLoop, count: Int, timeout: Duration, continuation: CheckedContinuation<Outcome, Error>) {
        self.loop = loop
        results = Array(repeating: nil, count: count)
        remaining = count
        self.continuation = continuation
        timer = LoopTimer(loop: loop) { [unowned self] in
            let done = results.count - remaining
            finish(.failure(TimedOut(description: "only \(done) of \(results.count) requests completed within \(timeout)")))
        }
        timer?.schedule(after: timeout)
        if count == 0 { finishIfDone() }
    }

    func record(_ index: Int, _ result: RequestResult) {
        if !loop.inEventLoop { offLoop += 1 }
        if results[index] != nil {
            duplicates += 1
            return
        }
        results[index] = result
        remaining -= 1
        finishIfDone()
    }

    private func finishIfDone() {
        guard remaining == 0 else { return }
        finish(.success(Outcome(results: results.map { $0! }, duplicateCompletions: duplicates, offLoopCompletions: offLoop)))
    }

    private func finish(_ outcome: Result<Outcome, Error>) {
        timer?.cancel()
        guard let continuation else { return }
        self.continuation = nil
        timer = nil
        continuation.resume(with: outcome)
    }
}

/// Sends `requests` through `sender` on `loop` (all in one loop turn) and waits for every completion.
func sendAll<Sender: HTTP2RequestSender & Sendable>(_ requests: [HTTP2Request], via sender: Sender, on loop: EventLoop,
                                                   timeout: Duration = .seconds(30)) async throws -> Outcome {
    try await withCheckedThrowingContinuation { continuation in
        loop.execute {
            let collector = Collector(loop: loop, count: requests.count, timeout: timeout, continuation: continuation)
            for (index, request) in requests.enumerated() {
                sender.send(request) { collector.record(index, $0) }
            }
        }
    }
}

/// Polls `condition` on `loop` until it holds; throws after `timeout` (generous by default: the
/// suite runs its tests in parallel on machines with few cores).
func waitUntil(on loop: EventLoop, timeout: Duration = .seconds(30), _ what: String,
               _ condition: @escaping @Sendable () -> Bool) async throws {
    try await eventually(what, timeout: timeout) { try loop.sync(condition) }
}

/// Requests used across the tests.
enum TestRequests {
    static func getTemplate(port: Int) -> HeaderTemplate {
        HeaderTemplate(method: .get, authority: "127.0.0.1:\(port)", headers: [HTTP2Header("user-agent", "touchline-tests")])
    }

    static func postTemplate(port: Int) -> HeaderTemplate {
        HeaderTemplate(method: .post, authority: "127.0.0.1:\(port)",
                       headers: [HTTP2Header("content-type", "application/json"), HTTP2Header("apns-push-type", "liveactivity")])
    }

    /// A 300-byte JSON body that names its request, so echoed bodies can be matched.
    static func body(_ index: Int, size: Int = 300) -> [UInt8] {
        var text = #"{"aps":{"event":"update","request":\#(index),"pad":""#
        text += String(repeating: "x", count: max(0, size - text.utf8.count - 3)) + #""}}"#
        return Array(text.utf8)
    }

    static func posts(_ count: Int, port: Int, bodySize: Int = 300) -> [HTTP2Request] {
        let template = postTemplate(port: port)
        return (0..<count).map { index in
            var headers = DynamicHeaders()
            headers.add("apns-request-id", "request-\(index)")
            headers.add("authorization", "bearer test-token", indexed: true)
            return HTTP2Request(template: template, path: "/echo/\(index)", headers: headers, body: body(index, size: bodySize))
        }
    }
}

extension HTTP2RequestError {
    /// The transport error inside, if this is one (a broken connection or none at all).
    var transportError: TransportError? {
        switch self {
        case .transport(let error), .notConnected(let error): error
        default: nil
        }
    }
}
