import Foundation
import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

/// Rough request rate of one connection with 100 concurrent 300-byte POSTs against nghttpd
/// (answering with a small file: its upload echo goes through temporary files and caps both
/// clients at a few thousand requests per second), next to h2load against the same server. Prints figures and asserts nothing about speed.
/// Opt-in (slow, meaningful only in release builds):
/// `TOUCHLINE_BENCH=1 swift test -c release --filter ThroughputBenchmark`.
@Suite("Throughput benchmark", .serialized, .enabled(if: ProcessInfo.processInfo.environment["TOUCHLINE_BENCH"] != nil))
struct ThroughputBenchmark {
    static let total = Int(ProcessInfo.processInfo.environment["TOUCHLINE_BENCH_REQUESTS"] ?? "") ?? 200_000
    static let concurrency = 100

    @Test func oneConnectionHundredStreamsAgainstNghttpd() async throws {
        let server = try ServerProcess.nghttpd(maxConcurrentStreams: ThroughputBenchmark.concurrency, echoUpload: false)
        let client = try TestClient(port: server.port)
        defer { client.close() }
        try await client.waitUntilReady()
        let request = HTTP2Request(template: TestRequests.postTemplate(port: server.port), path: "/hello.txt", body: TestRequests.body(0))

        let bodyFile = TestPKI.shared.directory + "/bench-body.json"
        try Data(request.body).write(to: URL(fileURLWithPath: bodyFile))
        // Alternate the two clients so that both see the same background load.
        for round in 1...3 {
            let (userBefore, systemBefore) = processCPUTime()
            let result = try await ClosedLoop.run(request, total: ThroughputBenchmark.total,
                                                  concurrency: ThroughputBenchmark.concurrency, via: client.connection, on: client.loop)
            let (userAfter, systemAfter) = processCPUTime()
            let perRequest = 1e6 / Double(result.completed)
            #expect(result.failures == 0)
            let rate = Double(result.completed) / result.seconds
            let reference = try h2load(["-n", "\(ThroughputBenchmark.total)", "-c", "1", "-m", "\(ThroughputBenchmark.concurrency)",
                                        "-d", bodyFile, "https://127.0.0.1:\(server.port)/hello.txt"])
            print(String(format: "round %d: touchline %.0f req/s (process CPU per request: user %.2f us, system %.2f us), h2load %.0f req/s, ratio %.2f",
                         round, rate, (userAfter - userBefore) * perRequest, (systemAfter - systemBefore) * perRequest, reference, rate / reference))
        }
    }

    /// Runs h2load and returns its request rate.
    private func h2load(_ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/h2load")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // "finished in 1.02s, 196270.47 req/s, 10.50MB/s"
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
              let field = line.split(separator: ",").dropFirst().first,
              let rate = Double(field.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") else {
            throw ToolFailure(description: "unexpected h2load output: \(text)")
        }
        return rate
    }
}

/// Keeps `concurrency` requests in flight (a new one starts in each completion) until `total` are done.
private final class ClosedLoop: @unchecked Sendable {
    struct Result: Sendable {
        var completed: Int
        var failures: Int
        var seconds: Double
    }

    private let request: HTTP2Request
    private let sender: HTTP2ClientConnection
    private var remainingToSend: Int
    private var completed = 0
    private var failures = 0
    private let total: Int
    private let started = ContinuousClock.now
    private var continuation: CheckedContinuation<Result, Never>?

    private init(request: HTTP2Request, total: Int, sender: HTTP2ClientConnection, continuation: CheckedContinuation<Result, Never>) {
        self.request = request
        self.total = total
        self.sender = sender
        remainingToSend = total
        self.continuation = continuation
    }

    static func run(_ request: HTTP2Request, total: Int, concurrency: Int, via sender: HTTP2ClientConnection, on loop: EventLoop) async throws -> Result {
        await withCheckedContinuation { continuation in
            loop.execute {
                let driver = ClosedLoop(request: request, total: total, sender: sender, continuation: continuation)
                for _ in 0..<concurrency { driver.sendNext() }
            }
        }
    }

    private func sendNext() {
        guard remainingToSend > 0 else { return }
        remainingToSend -= 1
        sender.send(request) { [self] result in
            completed += 1
            if case .failure = result { failures += 1 }
            if completed == total {
                let elapsed = ContinuousClock.now - started
                continuation?.resume(returning: Result(completed: completed, failures: failures, seconds: elapsed.inSeconds))
                continuation = nil
            } else {
                sendNext()
            }
        }
    }
}

/// User and system CPU seconds of this process so far.
private func processCPUTime() -> (user: Double, system: Double) {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return (Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
            Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6)
}
