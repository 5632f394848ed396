import CNATS
import Foundation

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
        apiRequest(body, to: "$JS.API.STREAM.PURGE.\(stream)", operation: operation, timeout: timeout, read: Self.purged, completion: completion)
    }

    /// A JetStream API request from the loop: its answer read by `read`, a request not sent or
    /// not answered in time a failure naming `operation`.
    private func apiRequest<T>(_ body: [UInt8], to subject: String, operation: String, timeout: Duration,
                               read: @escaping ([UInt8], String) -> Result<T, NATSError>,
                               completion: @escaping (Result<T, NATSError>) -> Void) {
        request(body, to: subject, timeout: timeout) { result in
            switch result {
            case .success(let answer):
                completion(read(answer.payload, operation))
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

    /// The message id (`Nats-Msg-Id`) of the message `stream` holds at `sequence`: nil when it
    /// holds none there (never stored, or removed since) or that message has no id.
    /// `completion` runs on the loop.
    ///
    /// A writer whose publish went unanswered, and whose retry was then refused for its expected
    /// last sequence, asks this of the sequence its write would have taken: current servers check
    /// the expected sequence before the message id, so the refusal alone does not say whether the
    /// first attempt was stored.
    public func messageID(in stream: String, at sequence: UInt64, timeout: Duration,
                          completion: @escaping (Result<String?, NATSError>) -> Void) {
        apiRequest(Array(#"{"seq":\#(sequence)}"#.utf8), to: "$JS.API.STREAM.MSG.GET.\(stream)", operation: "read message \(sequence) of \(stream)",
                   timeout: timeout, read: Self.storedMessageID, completion: completion)
    }

    /// Reads a `stream_msg_get_response`: its base64 `hdrs` hold the stored headers. "No message
    /// found" (10037) is nil; any other error object is a failure carrying the servers' words.
    static func storedMessageID(_ payload: [UInt8], operation: String) -> Result<String?, NATSError> {
        let text = String(decoding: payload, as: UTF8.self)
        if text.contains(#""err_code":10037"#) { return .success(nil) }
        guard text.contains(#""message":{"#) else {
            return .failure(NATSError(status: NATS_ERR.rawValue, operation: operation, detail: String(text.prefix(300))))
        }
        guard let encoded = text.split(separator: #""hdrs":""#).dropFirst().first?.prefix(while: { $0 != "\"" }),
              let headers = Data(base64Encoded: String(encoded)) else { return .success(nil) }
        for line in String(decoding: headers, as: UTF8.self).split(separator: "\r\n") {
            let field = line.split(separator: ":", maxSplits: 1)
            if field.count == 2, field[0].lowercased() == "nats-msg-id" {
                return .success(field[1].trimmingCharacters(in: .whitespaces))
            }
        }
        return .success(nil)
    }
}
