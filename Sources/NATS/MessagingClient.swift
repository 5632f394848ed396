import TouchlineRuntime

/// Core NATS on one connection, as the cluster code uses it: fire-and-forget publishes (with a
/// reply subject for request-reply), subscriptions delivered on a loop, private inboxes.
/// ``NATSConnection`` is the real one; an in-memory cluster for tests implements it too, so
/// whatever is written against this protocol (``NATSRequests``, the gateways' hand-over of
/// requests) runs the same on both. Implementations keep the real client's semantics: every
/// message a subscription receives is handed to its loop with `EventLoop.execute`, in the order
/// the messages were published; a request to a subject nobody subscribes to is answered at once
/// with a status-only message carrying the header `Status: 503` (see ``NATSRequests``).
public protocol MessagingClient: AnyObject, Sendable {
    /// Sends a message on `subject` (at most once, no acknowledgement); `reply` is where an
    /// answer goes.
    func publish(_ payload: [UInt8], to subject: String, reply: String?) throws(NATSError)

    /// Every message on `subject` (wildcards allowed), on `loop`; with `queue`, each message goes
    /// to one member of the queue group.
    func subscribe(to subject: String, queue: String?, loop: EventLoop,
                   handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription

    /// A unique subject for answers addressed to this client.
    func newInbox() -> String

    /// Waits until the servers have taken everything sent before (a subscription's interest
    /// included: a request sent by another client after this returns reaches it). Blocks.
    func flush(timeout: Duration) throws(NATSError)

    /// The largest message the servers accept (headers included), or 0 when not connected.
    var maximumPayload: Int { get }

    /// Closes the client; its subscriptions deliver nothing more.
    func close()
}

extension MessagingClient {
    /// Sends a message on `subject` without a reply subject.
    public func publish(_ payload: [UInt8], to subject: String) throws(NATSError) {
        try publish(payload, to: subject, reply: nil)
    }

    /// Every message on `subject`, on `loop`, outside any queue group.
    public func subscribe(to subject: String, loop: EventLoop,
                          handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription {
        try subscribe(to: subject, queue: nil, loop: loop, handler: handler)
    }
}

/// A running subscription (core or JetStream). Cancelling stops delivery; messages already
/// handed to the loop may still arrive, so a handler that must stop at once checks its own
/// state. Releasing the last reference cancels it too.
public protocol MessageSubscription: AnyObject, Sendable {
    func cancel()
}
