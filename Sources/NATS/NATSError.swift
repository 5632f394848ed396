import CNATS

/// A failure of the NATS client or of the JetStream API, with what was being done and the
/// client's own words (for an operator's log line or a refusal at start).
public struct NATSError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The client status (`natsStatus`), e.g. `NATS_TIMEOUT`, `NATS_NO_SERVER`.
    public let status: UInt32
    /// JetStream's error code when the server answered with one (e.g. 10071, wrong last
    /// sequence: a compare-and-set that lost), else 0.
    public let jetStreamCode: Int
    /// What was being done, e.g. "connect to nats://127.0.0.1:4222".
    public let operation: String
    /// The client's or the server's text.
    public let detail: String

    public init(status: UInt32, jetStreamCode: Int = 0, operation: String, detail: String) {
        self.status = status
        self.jetStreamCode = jetStreamCode
        self.operation = operation
        self.detail = detail
    }

    /// The error for a failed call, in the client's words (see ``lastErrorText(_:)``).
    init(_ status: natsStatus, jetStreamCode: jsErrCode = jsErrCode(0), operation: String) {
        self.init(status: status.rawValue, jetStreamCode: Int(jetStreamCode.rawValue), operation: operation,
                  detail: Self.lastErrorText(status))
    }

    public var description: String { "\(operation): \(detail)" }

    /// The publish expected another last sequence of its stream: someone else wrote first.
    public var isWrongLastSequence: Bool { jetStreamCode == Int(JSStreamWrongLastSequenceErr.rawValue) }
    /// No answer in time: the outcome is unknown (the write may or may not be stored).
    public var isTimeout: Bool { status == NATS_TIMEOUT.rawValue }
    /// The stream is at its size limit and refuses new messages (it keeps what it holds).
    public var isStreamFull: Bool {
        jetStreamCode == Int(JSStreamStoreFailedErr.rawValue) && (detail.contains("maximum bytes") || detail.contains("maximum messages"))
    }

    /// The error with the JetStream code its words name, when it came without one: the C
    /// client's key-value calls pass on the servers' description but not their code.
    var withJetStreamCodeOfItsWords: NATSError {
        guard jetStreamCode == 0 else { return self }
        let known: [(words: String, code: jsErrCode)] = [("no suitable peers for placement", JSClusterNoPeersErr),
                                                         ("temporarily unavailable", JSClusterNotAvailErr)]
        guard let match = known.first(where: { detail.contains($0.words) }) else { return self }
        return NATSError(status: status, jetStreamCode: Int(match.code.rawValue), operation: operation, detail: detail)
    }

    /// What a cluster answers while it forms or elects a leader, and stops answering once it
    /// has: no answer in time, no JetStream responder yet, no peers for placement (a node still
    /// joining), no leader, not available, an offline stream.
    public var isClusterForming: Bool {
        if isTimeout || status == NATS_NO_RESPONDERS.rawValue { return true }
        let forming: [jsErrCode] = [JSClusterIncompleteErr, JSClusterNoPeersErr, JSClusterNotAssignedErr, JSClusterNotAvailErr,
                                    JSClusterNotLeaderErr, JSStreamOfflineErr]
        return forming.contains { Int($0.rawValue) == jetStreamCode }
    }

    /// Throws unless `status` is `NATS_OK`; the detail is the client's last error on this thread
    /// (which names the server or the field) when it has one, else the status text.
    static func check(_ status: natsStatus, jetStreamCode: jsErrCode = jsErrCode(0),
                      _ operation: @autoclosure () -> String) throws(NATSError) {
        guard status != NATS_OK else { return }
        throw NATSError(status, jetStreamCode: jetStreamCode, operation: operation())
    }

    static func lastErrorText(_ status: natsStatus) -> String {
        var last = NATS_OK
        if let text = nats_GetLastError(&last), last == status, text.pointee != 0 { return String(cString: text) }
        return String(cString: natsStatus_GetText(status))
    }
}
