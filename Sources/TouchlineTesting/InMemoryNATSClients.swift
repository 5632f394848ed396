import NATS
import Synchronization
import TouchlineRuntime

/// One client of an ``InMemoryNATSCluster``: core NATS, as ``NATSConnection`` is on a real one.
public final class InMemoryNATSConnection: MessagingClient {
    let cluster: InMemoryNATSCluster
    let client: Client
    private let inboxes = Atomic<UInt64>(0)

    init(cluster: InMemoryNATSCluster, client: Client) {
        self.cluster = cluster
        self.client = client
    }

    public var maximumPayload: Int { cluster.maximumPayload }

    public func publish(_ payload: [UInt8], to subject: String, reply: String?) throws(NATSError) {
        let operation = "publish to \(subject)"
        guard payload.count <= cluster.maximumPayload else { throw NATSError.payloadTooLarge(operation: operation) }
        let now = cluster.clock.now()
        try cluster.perform { [client] server throws(NATSError) in
            if server.closed.contains(client.id) { throw NATSError.connectionClosed(operation: operation) }
            // A client cut off loses what it sends.
            if server.reaches(client) { server.route(NATSMessage(subject: subject, reply: reply, payload: payload), now: now) }
        }
    }

    public func subscribe(to subject: String, queue: String?, loop: EventLoop,
                          handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription {
        let now = cluster.clock.now()
        let id = try cluster.perform { [client] server throws(NATSError) in
            if server.closed.contains(client.id) { throw NATSError.connectionClosed(operation: "subscribe to \(subject)") }
            let id = server.newID()
            server.subscribers[id] = .init(client: client, pattern: SubjectPattern(subject), queue: queue, loop: loop, handler: handler)
            // A new member of a queue group may be what a push consumer waits for.
            if queue != nil { server.pumpAllConsumers(now: now) }
            return id
        }
        return InMemorySubscription(cluster: cluster, id: id)
    }

    public func newInbox() -> String { "_INBOX.\(client.name).\(client.id).\(inboxes.add(1, ordering: .relaxed).newValue)" }

    /// Everything is delivered as it is sent here: nothing to wait for.
    public func flush(timeout: Duration) throws(NATSError) {}

    public func close() {
        // What goes is let go of after the lock (a handler may own another subscription).
        let removed = cluster.state.withLock { [client] server in
            server.closed.insert(client.id)
            let subscribers = server.subscribers.filter { $0.value.client == client }
            let ordered = server.ordered.filter { $0.value.client == client }
            server.subscribers = server.subscribers.filter { $0.value.client != client }
            server.ordered = server.ordered.filter { $0.value.client != client }
            return (subscribers, ordered)
        }
        withExtendedLifetime(removed) {}
    }
}

/// JetStream on one client of an ``InMemoryNATSCluster``, as ``JetStream`` is on a real one.
public final class InMemoryJetStream: JetStreamClient {
    public let connection: InMemoryNATSConnection

    public init(_ connection: InMemoryNATSConnection) { self.connection = connection }

    public var messaging: any MessagingClient { connection }

    private var cluster: InMemoryNATSCluster { connection.cluster }
    private var client: Client { connection.client }

    public func publish(_ payload: [UInt8], to subject: String, headers: [String: String], conditions: JetStream.PublishConditions,
                        loop: EventLoop, completion: @escaping JetStream.Completion) {
        let now = cluster.clock.now()
        cluster.perform { [cluster, client] server in
            let result = server.publish(payload, to: subject, headers: headers, conditions: conditions, from: client,
                                        maximumPayload: cluster.maximumPayload, now: now)
            server.hand(to: loop) { completion(result) }
        }
    }

    @discardableResult
    public func ensureStream(_ settings: JetStream.StreamSettings) throws(NATSError) -> JetStream.StreamState {
        let now = cluster.clock.now()
        return try cluster.perform { [client] server throws(NATSError) in try server.ensureStream(settings, client: client, now: now) }
    }

    public func streamState(_ name: String) throws(NATSError) -> JetStream.StreamState? {
        try read(name, "read stream \(name)") { $0?.state }
    }

    public func messageCount(stream: String, subject: String) throws(NATSError) -> UInt64 {
        let pattern = SubjectPattern(subject)
        return try read(stream, "count the messages of \(subject) in \(stream)") { UInt64($0?.messages.count { pattern.matches($0.subject) } ?? 0) }
    }

    public func lastMessage(stream: String, subject: String) throws(NATSError) -> (payload: [UInt8], sequence: UInt64)? {
        let pattern = SubjectPattern(subject)
        let operation = "read the last message of \(subject)"
        // As the servers answer: no such stream is an error, no such message is none.
        let last = try read(stream, operation) { stored -> Result<LastMessage?, NATSError> in
            guard let stored else { return .failure(.streamNotFound(operation: operation)) }
            return .success(stored.messages.last { pattern.matches($0.subject) }.map { LastMessage(payload: $0.payload, sequence: $0.sequence) })
        }
        return try last.get().map { ($0.payload, $0.sequence) }
    }

    private struct LastMessage: Sendable {
        let payload: [UInt8]
        let sequence: UInt64
    }

    public func ensureKeyValueBucket(_ name: String, replicas: Int, history: Int, maximumValueSize: Int, maximumBytes: Int?) throws(NATSError) {
        try ensureStream(.init(name: "KV_\(name)", subjects: ["$KV.\(name).>"], replicas: replicas, maximumMessagesPerSubject: history,
                               maximumMessageSize: maximumValueSize, maximumBytes: maximumBytes))
    }

    public func subscribeOrdered(to subject: String, from start: JetStream.DeliveryStart, loop: EventLoop, window: DeliveryWindow?,
                                 handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription {
        let id = try cluster.perform { [client, cluster] server throws(NATSError) in
            try server.subscribeOrdered(to: subject, from: start, client: client, loop: loop, window: window,
                                        resume: { [weak cluster] id in cluster?.perform { $0.catchUp(id) } }, handler: handler)
        }
        return InMemorySubscription(cluster: cluster, id: id)
    }

    public func ensurePushConsumer(_ settings: JetStream.PushConsumerSettings) throws(NATSError) {
        let now = cluster.clock.now()
        try cluster.perform { [client] server throws(NATSError) in try server.ensurePushConsumer(settings, client: client, now: now) }
    }

    /// Reads stream `name` (nil: there is none) as it is now.
    private func read<T: Sendable>(_ name: String, _ operation: String, _ body: (InMemoryStream?) -> T) throws(NATSError) -> T {
        let now = cluster.clock.now()
        return try cluster.perform { [client] server throws(NATSError) in body(try server.read(name, client: client, now: now, operation)) }
    }
}

/// A core subscription or an ordered consumer on the in-memory cluster; released, it is cancelled.
final class InMemorySubscription: MessageSubscription {
    private weak let cluster: InMemoryNATSCluster?
    private let id: UInt64

    init(cluster: InMemoryNATSCluster, id: UInt64) {
        self.cluster = cluster
        self.id = id
    }

    deinit { cancel() }

    func cancel() {
        // What goes is let go of after the lock (a handler may own another subscription).
        let removed = cluster?.state.withLock { [id] server in (server.subscribers.removeValue(forKey: id), server.ordered.removeValue(forKey: id)) }
        withExtendedLifetime(removed) {}
    }
}
