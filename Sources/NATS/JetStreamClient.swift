import CNATS
import TouchlineRuntime

/// JetStream as the cluster code uses it: publishes acknowledged once stored (with
/// deduplication ids and a compare-and-set on the stream's last sequence), streams and
/// key-value buckets, ordered consumers and the direct-ingest push consumer. ``JetStream`` (the
/// C client on a real cluster) implements it, and so does the in-memory cluster the tests run
/// several gateways on; the contract tests hold both to the same behaviour.
///
/// What every implementation keeps (docs/cluster.md, "Testing tiers"):
/// - completions and deliveries run on the caller's loop, through `EventLoop.execute`;
/// - failures are ``NATSError``s with the servers' JetStream codes: a lost compare-and-set is
///   ``NATSError/isWrongLastSequence``, an answer that did not come is ``NATSError/isTimeout``;
/// - a publish whose message id was stored within the stream's duplicate window is acknowledged
///   with the first one's sequence and `duplicate`, and its condition is not checked again;
/// - the management calls (`ensure…`, `streamState`, `lastMessage`, `messageCount`) may block:
///   never on a loop;
/// - purges are JetStream API requests (``NATSRequests/purge(stream:below:timeout:completion:)``)
///   over ``messaging``.
public protocol JetStreamClient: AnyObject, Sendable {
    /// The core connection underneath: acknowledgements, request-reply and purges go over it.
    var messaging: any MessagingClient { get }

    /// Publishes `payload` to `subject`; `completion` runs on `loop` with the cluster's answer.
    func publish(_ payload: [UInt8], to subject: String, headers: [String: String], conditions: JetStream.PublishConditions,
                 loop: EventLoop, completion: @escaping JetStream.Completion)

    /// Creates the stream, or updates one of that name to these settings; returns its state.
    @discardableResult
    func ensureStream(_ settings: JetStream.StreamSettings) throws(NATSError) -> JetStream.StreamState

    /// The stream's state, or nil if there is no stream of that name.
    func streamState(_ name: String) throws(NATSError) -> JetStream.StreamState?

    /// How many messages `stream` holds on `subject` (0 when none, or no such stream).
    func messageCount(stream: String, subject: String) throws(NATSError) -> UInt64

    /// The last message stored on `subject` in `stream`, or nil if it has none.
    func lastMessage(stream: String, subject: String) throws(NATSError) -> (payload: [UInt8], sequence: UInt64)?

    /// A key-value bucket: stream `KV_<name>` on subjects `$KV.<name>.>` keeping `history`
    /// values per key, refusing writes past `maximumBytes` (nil: unlimited). Creating an existing
    /// bucket succeeds, and gives it `maximumBytes`.
    func ensureKeyValueBucket(_ name: String, replicas: Int, history: Int, maximumValueSize: Int, maximumBytes: Int?) throws(NATSError)

    /// Every stored message on `subject` (wildcards allowed) from `start` on, once, in stream
    /// order, on `loop`, then every new one.
    func subscribeOrdered(to subject: String, from start: JetStream.DeliveryStart, loop: EventLoop, window: DeliveryWindow?,
                          handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription

    /// Creates the durable push consumer, or leaves it as it is when it exists with these settings.
    func ensurePushConsumer(_ settings: JetStream.PushConsumerSettings) throws(NATSError)
}

extension JetStreamClient {
    /// Publishes without headers or conditions.
    public func publish(_ payload: [UInt8], to subject: String, loop: EventLoop, completion: @escaping JetStream.Completion) {
        publish(payload, to: subject, headers: [:], conditions: JetStream.PublishConditions(), loop: loop, completion: completion)
    }

    /// Publishes with headers, without conditions.
    public func publish(_ payload: [UInt8], to subject: String, headers: [String: String], loop: EventLoop,
                        completion: @escaping JetStream.Completion) {
        publish(payload, to: subject, headers: headers, conditions: JetStream.PublishConditions(), loop: loop, completion: completion)
    }

    /// Publishes with conditions, without headers.
    public func publish(_ payload: [UInt8], to subject: String, conditions: JetStream.PublishConditions, loop: EventLoop,
                        completion: @escaping JetStream.Completion) {
        publish(payload, to: subject, headers: [:], conditions: conditions, loop: loop, completion: completion)
    }

    /// A bucket keeping one value per key.
    public func ensureKeyValueBucket(_ name: String, replicas: Int, maximumValueSize: Int = 1_024, maximumBytes: Int? = nil) throws(NATSError) {
        try ensureKeyValueBucket(name, replicas: replicas, history: 1, maximumValueSize: maximumValueSize, maximumBytes: maximumBytes)
    }

    /// Creates or updates the stream as ``ensureStream(_:)`` does, but refuses, naming both
    /// figures, to give a stream that refuses new messages when full a limit below what it
    /// holds: it would refuse every write from then on.
    @discardableResult
    public func ensureBoundedStream(_ settings: JetStream.StreamSettings) throws(NATSError) -> JetStream.StreamState {
        if let limit = settings.maximumBytes, settings.whenFull == .refuseNew, let state = try streamState(settings.name), state.bytes > limit {
            throw NATSError(status: NATS_ERR.rawValue, operation: "limit stream \(settings.name)",
                            detail: "it holds \(state.bytes) bytes, more than the limit of \(limit) it would get: raise the limit")
        }
        return try ensureStream(settings)
    }

    /// An ordered consumer without a delivery window.
    public func subscribeOrdered(to subject: String, from start: JetStream.DeliveryStart, loop: EventLoop,
                                 handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription {
        try subscribeOrdered(to: subject, from: start, loop: loop, window: nil, handler: handler)
    }

    /// Acknowledges a message a push consumer delivered: the consumer moves on (for a
    /// work-queue stream, the message is removed).
    public func acknowledge(_ message: NATSMessage) {
        guard let reply = message.reply else { return }
        try? messaging.publish(Array("+ACK".utf8), to: reply)
    }

    /// Hands a delivered message back, to be delivered again after `delay`.
    public func deliverAgain(_ message: NATSMessage, after delay: Duration) {
        guard let reply = message.reply else { return }
        try? messaging.publish(Array(#"-NAK {"delay": \#(delay.milliseconds * 1_000_000)}"#.utf8), to: reply)
    }
}
