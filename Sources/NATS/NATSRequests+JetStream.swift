import CNATS

/// JetStream API calls sent as requests from a loop, for the calls a loop makes in passing and
/// must not block on (the client's own `js_*` management calls wait for their answer).
extension NATSRequests {
    /// Removes the messages of `stream` below sequence `sequence` (JetStream's purge with
    /// `seq`); the message at `sequence` and later ones stay. `completion` runs on the loop with
    /// how many were removed, or why not.
    public func purge(stream: String, below sequence: UInt64, timeout: Duration,
                      completion: @escaping (Result<UInt64, NATSError>) -> Void) {
        purge(stream: stream, Array(#"{"seq":\#(sequence)}"#.utf8), operation: "purge \(stream) below sequence \(sequence)",
              timeout: timeout, completion: completion)
    }

    /// Removes every message of `stream` on `subject` (wildcards allowed); `completion` (on the
    /// loop) gets how many went. A key-value bucket forgets keys this way without leaving
    /// tombstones behind.
    public func purge(stream: String, subject filter: String, timeout: Duration,
                      completion: @escaping (Result<UInt64, NATSError>) -> Void) {
        // Subjects hold no '"' or '\\' nor control characters (the client refuses them), so quoting is enough.
        let request = Array(#"{"filter":""#.utf8) + Array(filter.utf8) + Array(#""}"#.utf8)
        purge(stream: stream, request, operation: "purge \(filter) from \(stream)", timeout: timeout, completion: completion)
    }

    private func purge(stream: String, _ body: [UInt8], operation: String, timeout: Duration,
                       completion: @escaping (Result<UInt64, NATSError>) -> Void) {
        let subject = "$JS.API.STREAM.PURGE.\(stream)"
        request(body, to: subject, timeout: timeout) { result in
            switch result {
            case .success(let answer):
                completion(Self.purged(answer.payload, operation: operation))
            case .failure(.notSent(let error)):
                completion(.failure(error))
            case .failure(let failure):
                completion(.failure(NATSError(status: NATS_TIMEOUT.rawValue, operation: operation, detail: failure.description)))
            }
        }
    }

    /// Reads `{"success":true,"purged":N}`; anything else (an `error` object) is a failure
    /// carrying the servers' words.
    static func purged(_ payload: [UInt8], operation: String) -> Result<UInt64, NATSError> {
        let text = String(decoding: payload, as: UTF8.self)
        guard text.contains(#""success":true"#) else {
            return .failure(NATSError(status: NATS_ERR.rawValue, operation: operation, detail: String(text.prefix(300))))
        }
        let count = text.split(separator: #""purged":"#).dropFirst().first.map { $0.prefix { $0.isNumber } }.flatMap { UInt64($0) }
        return .success(count ?? 0)
    }
}
