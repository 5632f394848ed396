import TouchlineCore

/// A fact to report to webhook receivers, written in the same commit as the fact itself.
///
/// The store adds one pending delivery per endpoint in `endpoints`, due at once; the outbox row
/// itself is also what `GET /v1/events` pages through, so an event with no subscribed endpoint is
/// still recorded for providers who pull.
public struct WebhookOutboxEntry: Sendable, Equatable {
    /// Unique (128 random bits in hex): the receiver's key for dropping repeats.
    public var eventID: String
    /// The event type, e.g. `channel.ended` (docs/api.md lists them).
    public var type: String
    public var createdAt: UnixTime
    /// The whole JSON document sent, signed byte for byte as stored.
    public var body: [UInt8]
    /// The configured endpoints subscribed to `type`.
    public var endpoints: [String]

    public init(eventID: String, type: String, createdAt: UnixTime, body: [UInt8], endpoints: [String]) {
        self.eventID = eventID
        self.type = type
        self.createdAt = createdAt
        self.body = body
        self.endpoints = endpoints
    }
}

/// Where one endpoint's delivery of one event stands. Stored as its raw text.
public enum WebhookDeliveryStatus: String, Sendable, CaseIterable {
    case pending
    /// The receiver answered 2xx.
    case delivered
    /// Still undelivered when the event reached the dead-letter age: no more attempts.
    case dead
}

/// The outcome of one attempt, written by the delivery loop.
public struct WebhookDeliveryUpdate: Sendable, Equatable {
    public var endpoint: String
    public var outboxID: Int64
    public var attempts: Int
    /// When a pending delivery is tried next (ignored for delivered and dead ones).
    public var nextAt: UnixTime
    public var status: WebhookDeliveryStatus

    public init(endpoint: String, outboxID: Int64, attempts: Int, nextAt: UnixTime, status: WebhookDeliveryStatus) {
        self.endpoint = endpoint
        self.outboxID = outboxID
        self.attempts = attempts
        self.nextAt = nextAt
        self.status = status
    }
}

/// An outbox row as read back.
public struct StoredWebhookEvent: Sendable, Equatable {
    /// Ascending in commit order within one store file: the pull cursor's position.
    public var id: Int64
    public var eventID: String
    public var type: String
    public var createdAt: UnixTime
    public var body: [UInt8]

    public init(id: Int64, eventID: String, type: String, createdAt: UnixTime, body: [UInt8]) {
        self.id = id
        self.eventID = eventID
        self.type = type
        self.createdAt = createdAt
        self.body = body
    }
}

/// A pending delivery whose time has come, with the event it carries.
public struct DueWebhookDelivery: Sendable, Equatable {
    public var endpoint: String
    public var attempts: Int
    public var event: StoredWebhookEvent

    public init(endpoint: String, attempts: Int, event: StoredWebhookEvent) {
        self.endpoint = endpoint
        self.attempts = attempts
        self.event = event
    }
}

/// One endpoint's deliveries still in the outbox, for metrics.
public struct WebhookEndpointBacklog: Sendable, Equatable {
    public var pending = 0
    /// When the oldest pending event was created (nil: none pending).
    public var oldestPendingAt: UnixTime?
    public var dead = 0

    public init() {}
}

/// The outbox's writes. One enum carried by both write families (``StoreOperation/webhook(_:)``
/// and ``TokenOperation/webhook(_:)``), because both store files hold an outbox: a fact is
/// recorded in the file (and the commit) of the state change it reports.
public enum WebhookOperation: Sendable, Equatable {
    /// Inserts the event and its pending deliveries; an event id already stored changes nothing,
    /// so a list written again after a failed commit never records an event twice.
    case record(WebhookOutboxEntry)
    /// Writes attempt outcomes; a delivery already pruned is skipped.
    case updateDeliveries([WebhookDeliveryUpdate])
    /// Drops up to `limit` events created before the moment, with their deliveries (oldest first).
    case prune(createdBefore: UnixTime, limit: Int)
}

extension StoreOperation {
    /// An outbox event recorded (the JetStream backend numbers these by log position).
    public var isOutboxRecord: Bool { if case .webhook(.record) = self { true } else { false } }
    /// An outbox prune (the JetStream backend applies these to its own tables, unlogged).
    public var isOutboxPrune: Bool { if case .webhook(.prune) = self { true } else { false } }
}
