import CNATS
import TouchlineRuntime

/// A subscription whose messages are handed, in the order the client received them, to one
/// loop. Cancelling stops delivery; messages the client had already taken may still arrive on
/// the loop afterwards, so a handler that must stop at once checks its own state.
public final class NATSSubscription: MessageSubscription, @unchecked Sendable {
    let handle: OpaquePointer
    public let subject: String
    private let connection: NATSConnection

    init(handle: OpaquePointer, subject: String, connection: NATSConnection) {
        self.handle = handle
        self.subject = subject
        self.connection = connection
    }

    /// Unsubscribed at once, destroyed once the client's read loop is past it
    /// (``SubscriptionRetirement``).
    deinit {
        natsSubscription_Unsubscribe(handle)
        connection.retire(handle)
    }

    /// Stops the subscription (for a JetStream consumer, the server forgets the consumer).
    public func cancel() { natsSubscription_Unsubscribe(handle) }

    /// Core NATS: every message on `subject` (wildcards allowed); with `queue`, each message goes
    /// to one member of the queue group.
    public static func subscribe(_ connection: NATSConnection, to subject: String, queue: String? = nil,
                                 loop: EventLoop, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> NATSSubscription {
        let sink = MessageSink(loop: loop, jetStream: false, handler: handler)
        let context = Unmanaged.passRetained(sink).toOpaque()
        var subscription: OpaquePointer?
        let status = if let queue {
            natsConnection_QueueSubscribe(&subscription, connection.handle, subject, queue, MessageSink.callback, context)
        } else {
            natsConnection_Subscribe(&subscription, connection.handle, subject, MessageSink.callback, context)
        }
        return try finish(status, subscription, subject: subject, context: context, connection: connection)
    }

    static func finish(_ status: natsStatus, _ subscription: OpaquePointer?, subject: String, context: UnsafeMutableRawPointer,
                       connection: NATSConnection, jetStreamCode: jsErrCode = jsErrCode(0)) throws(NATSError) -> NATSSubscription {
        guard status == NATS_OK, let subscription else {
            Unmanaged<MessageSink>.fromOpaque(context).release()
            throw NATSError(status == NATS_OK ? NATS_ERR : status, jetStreamCode: jetStreamCode, operation: "subscribe to \(subject)")
        }
        // The client calls this once no message callback can follow: the sink goes with it.
        natsSubscription_SetOnCompleteCB(subscription, { context in
            Unmanaged<MessageSink>.fromOpaque(context!).release()
        }, context)
        return NATSSubscription(handle: subscription, subject: subject, connection: connection)
    }
}

/// Where a subscription's messages go: copied on the client's thread, handled on the loop.
final class MessageSink: Sendable {
    let loop: EventLoop
    let jetStream: Bool
    let window: DeliveryWindow?
    let handler: @Sendable (NATSMessage) -> Void

    init(loop: EventLoop, jetStream: Bool, window: DeliveryWindow? = nil, handler: @escaping @Sendable (NATSMessage) -> Void) {
        self.loop = loop
        self.jetStream = jetStream
        self.window = window
        self.handler = handler
    }

    static let callback: natsMsgHandler = { _, _, message, context in
        let sink = Unmanaged<MessageSink>.fromOpaque(context!).takeUnretainedValue()
        sink.window?.take()
        let copy = NATSMessage(copying: message!, jetStream: sink.jetStream)
        natsMsg_Destroy(message)
        let handler = sink.handler
        sink.loop.execute { handler(copy) }
    }
}
