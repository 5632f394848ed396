import Foundation
import Synchronization

/// Registers push-to-start tokens through `POST /v1/tokens/batch`, a batch per request, over
/// two keep-alive connections (one parses while the store commits the other's batch).
final class TokenRegistration: Sendable {
    let batchSize: Int
    /// Batches sent again after a 503.
    let retried = Atomic(0)

    init(batchSize: Int) { self.batchSize = batchSize }

    /// `count` distinct tokens spread over the token space as devices' are (their bytes are
    /// random): the first 16 digits are the number times an odd constant, a bijection of 64-bit
    /// numbers. Numbered tokens (`%064x`) would share their first 58 digits, which makes every
    /// index keyed by the token grow at one end only, unlike a real audience.
    static func deviceTokens(_ count: Int) -> [String] {
        let rest = String(repeating: "ab", count: 24)
        return (0..<count).map { String(format: "%016llx", UInt64($0 + 1) &* 0x9E37_79B9_7F4A_7C15) + rest }
    }

    /// Registers every token as following `follow`; returns the seconds it took.
    func register(_ tokens: [String], follow: String, connect: @escaping @Sendable () throws -> HTTPLoadClient) throws -> Double {
        try register(tokens, follow: follow, users: nil) { _ in try connect() }
    }

    /// Registers every token as following `follow`, token i of user `<users><i>` when `users`
    /// is given, connection i made by `connect(i)`; returns the seconds it took. A batch answered
    /// 503 (a cluster partition moving) is sent again up to `retries` times, as a provider would
    /// (registration is an upsert); ``retried`` counts them.
    func register(_ tokens: [String], follow: String, users: String?, retries: Int = 0,
                  connect: @escaping @Sendable (Int) throws -> HTTPLoadClient) throws -> Double {
        let connections = 2
        let batches = stride(from: 0, to: tokens.count, by: batchSize).map { $0..<min($0 + batchSize, tokens.count) }
        let started = monotonicNanoseconds()
        _ = try onThreads(connections) { index in
            let client = try connect(index)
            for batch in stride(from: index, to: batches.count, by: connections).map({ batches[$0] }) {
                let items = batch.map { n in
                    let user = users.map { #","userId":"\#($0)\#(n)""# } ?? ""
                    return #"{"token":"\#(tokens[n])","kind":"push-to-start","follows":["\#(follow)"]\#(user)}"#
                }
                let body = Array(#"{"tokens":[\#(items.joined(separator: ","))]}"#.utf8)
                var response = try client.send("POST", "/v1/tokens/batch", body: body)
                for _ in 0..<retries where response.status == 503 {
                    self.retried.add(1, ordering: .relaxed)
                    Thread.sleep(forTimeInterval: 0.2)
                    response = try client.send("POST", "/v1/tokens/batch", body: body)
                }
                guard response.status == 201, response.text.contains(#""registered":\#(batch.count)"#) else {
                    throw LoadError("registering tokens \(batch) answered \(response.status): \(response.text.prefix(300))")
                }
            }
        }
        return Double(monotonicNanoseconds() - started) / 1e9
    }
}
