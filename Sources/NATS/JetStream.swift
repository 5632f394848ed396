import CNATS
import Synchronization
import TouchlineRuntime

/// JetStream on one connection: publishes that complete when the cluster has stored them,
/// ordered consumers, and the management of streams and key-value buckets
/// (`JetStream+Streams.swift`).
///
/// A publish never blocks its loop: the client sends it at once and reports the cluster's
/// acknowledgement (or refusal, or a timeout after ``NATSSettings/requestTimeout``) later on the
/// publisher's loop. Only an acknowledged publish is stored on a quorum of the stream's replicas:
/// that is when a gateway on JetStream may answer 202.
public final class JetStream: JetStreamClient, @unchecked Sendable {
    /// The cluster's answer to a publish: where the message was stored, or that an identical
    /// message id was already stored within the stream's duplicate window (nothing stored twice).
    public struct Acknowledgement: Sendable, Equatable {
        public var stream: String
        public var sequence: UInt64
        public var duplicate: Bool

        public init(stream: String, sequence: UInt64, duplicate: Bool) {
            self.stream = stream
            self.sequence = sequence
            self.duplicate = duplicate
        }
    }

    /// Conditions the stream checks before storing a publish.
    public struct PublishConditions: Sendable, Equatable {
        /// Deduplication id (`Nats-Msg-Id`): a second publish with it inside the stream's
        /// duplicate window is acknowledged as a duplicate and not stored.
        public var messageID: String?
        /// Compare-and-set on the whole stream: stored only if the stream's last message has
        /// this sequence (0: the stream is empty).
        public var expectedLastSequence: UInt64?
        /// Compare-and-set on the subject (a bucket's key): stored only if the subject's last
        /// message has this sequence (0: it has none). It holds against concurrent writers on a
        /// replicated stream from nats-server 2.9.21 on (2.9.10 stored racing writes, so the
        /// gateway refuses servers that old; measured in `JetStreamTests`).
        public var expectedLastSubjectSequence: UInt64?

        public init(messageID: String? = nil, expectedLastSequence: UInt64? = nil, expectedLastSubjectSequence: UInt64? = nil) {
            self.messageID = messageID
            self.expectedLastSequence = expectedLastSequence
            self.expectedLastSubjectSequence = expectedLastSubjectSequence
        }
    }

    public typealias Completion = @Sendable (Result<Acknowledgement, NATSError>) -> Void

    let context: OpaquePointer
    public let connection: NATSConnection
    private let acknowledgements: AcknowledgementRouter

    public var messaging: any MessagingClient { connection }

    public init(_ connection: NATSConnection) throws(NATSError) {
        self.connection = connection
        let router = AcknowledgementRouter()
        acknowledgements = router
        var options = jsOptions()
        try NATSError.check(jsOptions_Init(&options), "JetStream options")
        options.Wait = connection.settings.requestTimeout.milliseconds
        options.PublishAsync.MaxPending = Int64(connection.settings.maximumPendingPublishes)
        options.PublishAsync.AckHandler = { _, message, acknowledgement, failure, context in
            Unmanaged<AcknowledgementRouter>.fromOpaque(context!).takeUnretainedValue()
                .deliver(message: message, acknowledgement: acknowledgement, failure: failure)
            natsMsg_Destroy(message)
        }
        options.PublishAsync.AckHandlerClosure = Unmanaged.passUnretained(router).toOpaque()
        var created: OpaquePointer?
        try NATSError.check(natsConnection_JetStream(&created, connection.handle, &options), "open JetStream")
        context = created!
    }

    deinit {
        // Acknowledgements still due would reach a freed router: wait for them briefly, and if
        // some never come, keep the router alive for the rest of the process.
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = connection.settings.requestTimeout.milliseconds
        if js_PublishAsyncComplete(context, &options) != NATS_OK {
            _ = Unmanaged.passRetained(acknowledgements)
        }
        jsCtx_Destroy(context)
    }

    /// Publishes `payload` to `subject`; `completion` runs on `loop` with the cluster's answer.
    public func publish(_ payload: [UInt8], to subject: String, headers: [String: String],
                        conditions: PublishConditions, loop: EventLoop,
                        completion: @escaping Completion) {
        var message: OpaquePointer?
        let created = payload.withUnsafeBytes { bytes in
            natsMsg_Create(&message, subject, nil, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
        }
        guard created == NATS_OK, let message else {
            return fail(created, subject: subject, loop: loop, completion: completion)
        }
        for (name, value) in headers { natsMsgHeader_Set(message, name, value) }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))
        acknowledgements.expect(key, subject: subject, loop: loop, completion: completion)
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = connection.settings.requestTimeout.milliseconds
        if let expected = conditions.expectedLastSequence {
            // The client leaves 0 out (it means "not set" to it); the server reads it as "empty".
            if expected == 0 { natsMsgHeader_Set(message, "Nats-Expected-Last-Sequence", "0") } else { options.ExpectLastSeq = expected }
        }
        if let expected = conditions.expectedLastSubjectSequence {
            if expected == 0 { natsMsgHeader_Set(message, "Nats-Expected-Last-Subject-Sequence", "0") } else { options.ExpectLastSubjectSeq = expected }
        }
        var owned: OpaquePointer? = message
        let status = withOptionalCString(conditions.messageID) { id in
            options.MsgId = id
            return js_PublishMsgAsync(context, &owned, &options)
        }
        guard status == NATS_OK else {
            natsMsg_Destroy(owned)
            if let pending = acknowledgements.take(key) { fail(status, subject: subject, loop: pending.loop, completion: pending.completion) }
            return
        }
    }

    private func fail(_ status: natsStatus, subject: String, loop: EventLoop, completion: @escaping Completion) {
        let error = NATSError(status, operation: "publish to \(subject)")
        loop.execute { completion(.failure(error)) }
    }
}

/// Publishes awaiting their acknowledgement, keyed by the client's message (which the
/// acknowledgement callback hands back), each with its publisher's loop.
final class AcknowledgementRouter: Sendable {
    struct Pending {
        let subject: String
        let loop: EventLoop
        let completion: JetStream.Completion
    }

    private let pending = Mutex<[UInt: Pending]>([:])

    func expect(_ key: UInt, subject: String, loop: EventLoop, completion: @escaping JetStream.Completion) {
        pending.withLock { $0[key] = Pending(subject: subject, loop: loop, completion: completion) }
    }

    func take(_ key: UInt) -> Pending? { pending.withLock { $0.removeValue(forKey: key) } }

    /// On the client's thread: finds the publisher and hands it the answer on its loop.
    func deliver(message: OpaquePointer?, acknowledgement: UnsafeMutablePointer<jsPubAck>?, failure: UnsafeMutablePointer<jsPubAckErr>?) {
        guard let message, let publish = take(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))) else { return }
        let result: Result<JetStream.Acknowledgement, NATSError>
        if let acknowledgement {
            result = .success(JetStream.Acknowledgement(stream: acknowledgement.pointee.Stream.map { String(cString: $0) } ?? "",
                                                        sequence: acknowledgement.pointee.Sequence,
                                                        duplicate: acknowledgement.pointee.Duplicate))
        } else {
            let status = failure?.pointee.Err ?? NATS_ERR
            let text = failure?.pointee.ErrText.map { String(cString: $0) } ?? String(cString: natsStatus_GetText(status))
            result = .failure(NATSError(status: status.rawValue, jetStreamCode: Int(failure?.pointee.ErrCode.rawValue ?? 0),
                                        operation: "publish to \(publish.subject)", detail: text))
        }
        let completion = publish.completion
        publish.loop.execute { completion(result) }
    }
}

func withOptionalCString<Result>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
