import TouchlineConfiguration
import TouchlineCore
import TouchlineStore

/// The webhook series of `/metrics`, one `endpoint` label per configured endpoint (at most
/// ``WebhookSettings/maximumEndpoints``, so the cardinality is bounded by the configuration).
extension WebhookSnapshot {
    package var metricFamilies: [MetricFamily] {
        let snapshot = self
        var delivered = MetricFamily("touchline_webhook_deliveries_total",
                                     help: "Webhook deliveries answered 2xx, by endpoint (since the start).", kind: .counter)
        var failed = MetricFamily("touchline_webhook_failed_attempts_total",
                                  help: "Webhook attempts that failed (non-2xx, no answer, timeout), by endpoint (since the start).", kind: .counter)
        var dead = MetricFamily("touchline_webhook_dead_total",
                                help: "Webhook deliveries given up at the dead-letter age, by endpoint (since the start).", kind: .counter)
        var pending = MetricFamily("touchline_webhook_pending", help: "Webhook deliveries waiting in the outboxes, by endpoint.", kind: .gauge)
        var oldest = MetricFamily("touchline_webhook_oldest_pending_age_seconds",
                                  help: "Age of the oldest undelivered webhook event, by endpoint (0: none pending).", kind: .gauge)
        for endpoint in snapshot.endpoints {
            let label: MetricLabels = ["endpoint": endpoint.name]
            delivered.add(endpoint.counters.delivered, label)
            failed.add(endpoint.counters.failedAttempts, label)
            dead.add(endpoint.counters.dead, label)
            pending.add(endpoint.backlog.pending, label)
            oldest.add(endpoint.backlog.oldestPendingAt.map { max(0, (snapshot.now - $0).inSeconds) } ?? 0, label)
        }
        return [delivered, failed, dead, pending, oldest]
    }
}

/// The webhook figures at one moment, carried to the ingest loop for `/metrics`.
package struct WebhookSnapshot: Sendable {
    struct Endpoint: Sendable {
        var name: String
        var counters: WebhookDelivery.Counters
        var backlog: WebhookEndpointBacklog
    }
    var endpoints: [Endpoint]
    var now: UnixTime
}
