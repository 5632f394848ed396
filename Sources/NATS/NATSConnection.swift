import CNATS
import Glibc
import Synchronization
import TouchlineRuntime

/// One connection to a NATS cluster: the one place the gateway calls the NATS C client's
/// connection API. The client runs its own threads; everything it reports (connection events,
/// messages, acknowledgements) is handed to the `EventLoop` its receiver chose, through
/// `EventLoop.execute`, the one hand-off between threads (docs/architecture.md). Publishing
/// only buffers, so it is safe from a loop; `connect`, `flush` and the JetStream management
/// calls wait for the network and belong on a starting or dedicated thread.
public final class NATSConnection: MessagingClient, @unchecked Sendable {
    /// What the connection reports about itself.
    public enum Event: Sendable, Equatable {
        /// The server in use was lost; the client is reconnecting (publishes are buffered).
        case disconnected
        /// Connected again, to this server.
        case reconnected(server: String)
        /// Closed for good (by ``close()``); nothing more follows.
        case closed
        /// An asynchronous error, e.g. a slow consumer dropping messages.
        case error(String)
    }

    let handle: OpaquePointer
    public let settings: NATSSettings
    /// Subscriptions dropped and not yet destroyed (``SubscriptionRetirement``).
    private let retirement = SubscriptionRetirement()

    private init(handle: OpaquePointer, settings: NATSSettings) {
        self.handle = handle
        self.settings = settings
    }

    /// Destroying the connection joins its read loop; its retired subscriptions go after it.
    deinit {
        natsConnection_Destroy(handle)
        retirement.destroyAll()
    }

    /// Connects to one of `settings.servers`, or throws an error naming them and the client's
    /// reason. `events` runs on `loop` for every later event.
    public static func connect(_ settings: NATSSettings, loop: EventLoop,
                               events: @escaping @Sendable (Event) -> Void) throws(NATSError) -> NATSConnection {
        let listener = EventSink.register(EventSink(loop: loop, deliver: events))
        var options: OpaquePointer?
        do {
            try NATSError.check(natsOptions_Create(&options), "create NATS options")
            defer { natsOptions_Destroy(options) }
            try apply(settings, to: options!)
            try install(listener, on: options!)
            var connection: OpaquePointer?
            try NATSError.check(natsConnection_Connect(&connection, options),
                                "connect to \(settings.servers.joined(separator: ", "))")
            return NATSConnection(handle: connection!, settings: settings)
        } catch {
            EventSink.unregister(listener)
            throw error
        }
    }

    /// Sends a message on `subject` (core NATS: at most once, no acknowledgement).
    public func publish(_ payload: [UInt8], to subject: String, reply: String?) throws(NATSError) {
        let status = payload.withUnsafeBytes { bytes in
            if let reply {
                natsConnection_PublishRequest(handle, subject, reply, bytes.baseAddress, Int32(bytes.count))
            } else {
                natsConnection_Publish(handle, subject, bytes.baseAddress, Int32(bytes.count))
            }
        }
        try NATSError.check(status, "publish to \(subject)")
    }

    /// Bytes published but still in the client's buffer, not yet written to the socket.
    public var bufferedBytes: Int { Int(natsConnection_Buffered(handle)) }

    /// Core NATS: every message on `subject` (``NATSSubscription/subscribe(_:to:queue:loop:handler:)``).
    public func subscribe(to subject: String, queue: String?, loop: EventLoop,
                          handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription {
        try NATSSubscription.subscribe(self, to: subject, queue: queue, loop: loop, handler: handler)
    }

    /// Waits until the server has processed everything published so far (a round trip).
    public func flush(timeout: Duration) throws(NATSError) {
        try NATSError.check(natsConnection_FlushTimeout(handle, timeout.milliseconds), "flush to NATS")
    }

    /// True while connected to a server (false while reconnecting or once closed).
    public var isConnected: Bool { natsConnection_Status(handle) == NATS_CONN_STATUS_CONNECTED }

    var isClosed: Bool { natsConnection_Status(handle) == NATS_CONN_STATUS_CLOSED }

    /// Takes a subscription of this connection, already unsubscribed, to destroy once the
    /// client's read loop is past it (``SubscriptionRetirement``).
    func retire(_ subscription: OpaquePointer) { retirement.retire(subscription, of: self) }

    /// Subscriptions dropped whose destruction waits for a round trip through the client's read
    /// loop (``SubscriptionRetirement``).
    public var subscriptionsAwaitingDestruction: Int { retirement.count }

    /// The largest message the connected server accepts (its `max_payload`, headers included),
    /// or 0 when not connected.
    public var maximumPayload: Int { Int(natsConnection_GetMaxPayload(handle)) }

    /// The URL of the server in use, if connected.
    public var connectedServer: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard natsConnection_GetConnectedUrl(handle, &buffer, buffer.count) == NATS_OK, buffer[0] != 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Closes the connection; pending messages are dropped. ``Event/closed`` follows.
    public func close() { natsConnection_Close(handle) }

    /// A unique subject for answers addressed to this connection.
    public func newInbox() -> String {
        var inbox: UnsafeMutablePointer<natsInbox>?
        guard natsInbox_Create(&inbox) == NATS_OK, let inbox else { fatalError("natsInbox_Create failed") }
        defer { natsInbox_Destroy(inbox) }
        return String(cString: inbox)
    }

    private static func apply(_ settings: NATSSettings, to options: OpaquePointer) throws(NATSError) {
        var urls = settings.servers.map { strdup($0) }
        defer { urls.forEach { free($0) } }
        let status = urls.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                natsOptions_SetServers(options, $0, Int32(buffer.count))
            }
        }
        try NATSError.check(status, "NATS servers \(settings.servers)")
        try NATSError.check(natsOptions_SetName(options, settings.name), "NATS connection name")
        try NATSError.check(natsOptions_SetTimeout(options, settings.connectTimeout.milliseconds), "NATS connect timeout")
        try NATSError.check(natsOptions_SetMaxReconnect(options, -1), "NATS reconnects")
        try NATSError.check(natsOptions_SetReconnectWait(options, settings.reconnectWait.milliseconds), "NATS reconnect wait")
        try NATSError.check(natsOptions_SetPingInterval(options, settings.pingInterval.milliseconds), "NATS ping interval")
        try NATSError.check(natsOptions_SetMaxPingsOut(options, Int32(settings.maxPingsOut)), "NATS pings out")
        try NATSError.check(natsOptions_SetFailRequestsOnDisconnect(options, true), "NATS request failure on disconnect")
        try NATSError.check(natsOptions_SetReconnectBufSize(options, Int32(NATSSettings.reconnectBufferBytes)), "NATS reconnect buffer")
        try NATSError.check(natsOptions_SetSendAsap(options, settings.sendsAtOnce), "NATS sends at once")
        switch settings.authentication {
        case .none: break
        case .token(let token):
            try NATSError.check(natsOptions_SetToken(options, token), "NATS token")
        case .user(let user, let password):
            try NATSError.check(natsOptions_SetUserInfo(options, user, password), "NATS user")
        case .credentialsFile(let path):
            try NATSError.check(natsOptions_SetUserCredentialsFromFiles(options, path, nil), "NATS credentials file \(path)")
        case .nkey(let publicKey, let seedFile):
            try NATSError.check(natsOptions_SetNKeyFromSeed(options, publicKey, seedFile), "NATS nkey seed file \(seedFile)")
        }
        if let tls = settings.tls {
            try NATSError.check(natsOptions_SetSecure(options, true), "NATS TLS")
            if let ca = tls.caFile {
                try NATSError.check(natsOptions_LoadCATrustedCertificates(options, ca), "NATS CA file \(ca)")
            }
            if let certificate = tls.certificateFile, let key = tls.keyFile {
                try NATSError.check(natsOptions_LoadCertificatesChain(options, certificate, key), "NATS client certificate \(certificate)")
            }
            if let name = tls.expectedHostname {
                try NATSError.check(natsOptions_SetExpectedHostname(options, name), "NATS expected host name")
            }
        }
    }

    /// Connection callbacks: each hands its event to the sink's loop. The closed callback
    /// unregisters the sink; a callback after it (the client's error callback can still come,
    /// from a subscription's thread) finds no sink and is dropped.
    private static func install(_ sink: UnsafeMutableRawPointer, on options: OpaquePointer) throws(NATSError) {
        try NATSError.check(natsOptions_SetDisconnectedCB(options, { _, context in
            EventSink.find(context)?.send(.disconnected)
        }, sink), "NATS disconnected callback")
        try NATSError.check(natsOptions_SetReconnectedCB(options, { connection, context in
            var buffer = [CChar](repeating: 0, count: 256)
            _ = natsConnection_GetConnectedUrl(connection, &buffer, buffer.count)
            EventSink.find(context)?.send(.reconnected(server: buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }))
        }, sink), "NATS reconnected callback")
        try NATSError.check(natsOptions_SetErrorHandler(options, { _, _, status, context in
            EventSink.find(context)?.send(.error(String(cString: natsStatus_GetText(status))))
        }, sink), "NATS error callback")
        try NATSError.check(natsOptions_SetClosedCB(options, { _, context in
            EventSink.find(context)?.send(.closed)
            EventSink.unregister(context)
        }, sink), "NATS closed callback")
    }

    /// Where a connection's events go: a loop and its handler.
    ///
    /// The client's callbacks carry the sink's number in a registry, not a pointer to it: the
    /// closed callback is not always the client's last (an error callback after it crashed a
    /// test run when it released the sink), and a number no longer registered is harmless.
    private final class EventSink: Sendable {
        let loop: EventLoop
        let deliver: @Sendable (Event) -> Void
        init(loop: EventLoop, deliver: @escaping @Sendable (Event) -> Void) {
            self.loop = loop
            self.deliver = deliver
        }

        private static let registry = Mutex<(next: UInt, sinks: [UInt: EventSink])>((1, [:]))

        /// Registers `sink`; the context the client hands back to the callbacks.
        static func register(_ sink: EventSink) -> UnsafeMutableRawPointer {
            let number = registry.withLock { registry in
                defer { registry.next += 1 }
                registry.sinks[registry.next] = sink
                return registry.next
            }
            return UnsafeMutableRawPointer(bitPattern: number)!
        }

        static func find(_ context: UnsafeMutableRawPointer?) -> EventSink? {
            registry.withLock { $0.sinks[UInt(bitPattern: context)] }
        }

        static func unregister(_ context: UnsafeMutableRawPointer?) {
            _ = registry.withLock { $0.sinks.removeValue(forKey: UInt(bitPattern: context)) }
        }

        func send(_ event: Event) {
            let deliver = deliver
            loop.execute { deliver(event) }
        }
    }
}
