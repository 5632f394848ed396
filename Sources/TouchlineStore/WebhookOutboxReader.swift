import TouchlineCore

/// Reads one store's webhook outbox: due deliveries for the delivery loop, pages of events for
/// `GET /v1/events`, and each endpoint's backlog for metrics.
///
/// The outbox is written through the store's writer, in the batch of the fact it reports
/// (``StoreOperation/webhook(_:)``, ``TokenOperation/webhook(_:)``): recording an event adds one
/// pending delivery per subscribed endpoint, due at its creation time; an event id recorded
/// again changes nothing; `updateDeliveries` writes attempt outcomes (a delivery pruned already
/// is skipped); `prune(createdBefore:limit:)` drops the oldest events created before the moment,
/// with their deliveries. Event ids are assigned in commit order and never reused, so the pull
/// cursor only moves forward. A reader sees committed writes only; it may be confined to the
/// thread that uses it.
public protocol WebhookOutboxReader: AnyObject {
    /// Up to `limit` of `endpoint`'s pending deliveries due at `now` (`nextAt <= now`), the
    /// earliest due first (ties in event id order).
    func dueDeliveries(endpoint: String, at now: UnixTime, limit: Int) throws(StoreError) -> [DueWebhookDelivery]

    /// When `endpoint`'s next pending delivery is due (nil: none pending).
    func nextDue(endpoint: String) throws(StoreError) -> UnixTime?

    /// Up to `limit` events with an id above `after`, in id (commit) order.
    func events(after: Int64, limit: Int) throws(StoreError) -> [StoredWebhookEvent]

    /// When the oldest event kept was created (nil: none).
    func oldestEventCreatedAt() throws(StoreError) -> UnixTime?

    /// The highest event id stored (0: none yet).
    func lastEventID() throws(StoreError) -> Int64

    /// `endpoint`'s pending and dead deliveries, and when its oldest pending event was created.
    func backlog(endpoint: String) throws(StoreError) -> WebhookEndpointBacklog

    /// Releases the reader (on its thread).
    func close()
}
