import APNs
import Foundation
import TouchlineCore
import TouchlineRuntime

/// Sends one push per token through an ``APNsClient``, keeping `concurrency` requests in flight.
///
/// Loop-confined: ``start(completion:)`` runs on the client's loop, and so does everything after.
final class PushLoad: @unchecked Sendable {
    private let client: APNsClient
    private let tokens: [String]
    private let payload: [UInt8]
    private let concurrency: Int
    private var next = 0
    private var completed = 0
    private(set) var failures: [String: Int] = [:]
    private var completion: (() -> Void)?

    init(client: APNsClient, tokens: [String], payload: [UInt8], concurrency: Int) {
        self.client = client
        self.tokens = tokens
        self.payload = payload
        self.concurrency = concurrency
    }

    func start(completion: @escaping () -> Void) {
        self.completion = completion
        for _ in 0..<min(concurrency, tokens.count) { sendNext() }
    }

    private func sendNext() {
        guard next < tokens.count else { return }
        let push = LiveActivityPush(deviceToken: tokens[next], payload: payload, priority: .powerConsiderate)
        next += 1
        client.send(push) { [self] result in
            if case .failure(let error) = result { failures["\(error)", default: 0] += 1 }
            completed += 1
            if completed == tokens.count {
                completion?()
                completion = nil
            } else {
                sendNext()
            }
        }
    }

    /// Runs the load to the end and returns the wall-clock seconds it took.
    static func run(client: APNsClient, tokens: [String], payload: [UInt8], concurrency: Int) async -> (seconds: Double, failures: [String: Int]) {
        let load = PushLoad(client: client, tokens: tokens, payload: payload, concurrency: concurrency)
        let started = DispatchTime.now()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            client.loop.execute { load.start { done.resume() } }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        let failures = try? await client.loop.submit { load.failures }
        return (seconds, failures ?? [:])
    }
}
