import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

extension OperatorsAPI {
    /// The routes a connection of the probes' reserve may ask for (`http.probeConnections`): a
    /// load balancer's health and readiness checks, and the scrape that shows what fills the port.
    package static let probePaths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    /// The provider API's connections and request bodies (`http` settings), for `/metrics`: read
    /// from the HTTP server on this loop. Keys are named by their scope, never by the key.
    func httpMetricFamilies() -> [MetricFamily] {
        guard let figures = httpServer?.figures else { return [] }
        let scopes = requestLimits.scopes
        func scope(_ owner: Int?) -> String { owner.flatMap { scopes.indices.contains($0) ? scopes[$0] : nil } ?? "none" }

        var connections = MetricFamily("touchline_http_connections",
                                       help: "Provider API connections open, by pool: general, or the probes' reserve beyond http.maxConnections.",
                                       kind: .gauge)
        connections.add(figures.generalConnections, ["pool": "general"])
        connections.add(figures.probeConnections, ["pool": "probe"])
        var refused = MetricFamily("touchline_http_connections_refused_total",
                                   help: "Connections refused, by reason: too_many_connections (the port full: at accept, or a request other than "
                                       + "a probe on the probes' reserve) or too_many_connections_from_address (http.maxConnectionsPerAddress).",
                                   kind: .counter)
        for reason in ["too_many_connections", "too_many_connections_from_address"] {
            refused.add(figures.connectionsRefused[reason, default: 0], ["reason": reason])
        }
        var firstRequest = MetricFamily("touchline_http_first_request_timeouts_total",
                                        help: "Connections closed for sending no complete request head within http.firstRequestTimeoutMilliseconds "
                                            + "of their accept.",
                                        kind: .counter)
        firstRequest.add(figures.firstRequestTimeouts)
        var reclaimed = MetricFamily("touchline_http_probe_slots_reclaimed_total",
                                     help: "Probe connections closed to give their slot to a newer connection (before their head was complete, or once answered).",
                                     kind: .counter)
        reclaimed.add(figures.probeSlotsReclaimed)
        var buffered = MetricFamily("touchline_http_buffered_body_bytes",
                                    help: "Request body bytes held in memory now, by the scope of the key that sent them.",
                                    kind: .gauge)
        for name in Set(scopes).sorted() { buffered.add(0, ["scope": name]) }
        for (owner, bytes) in figures.bufferedBodyBytesByOwner { buffered.add(bytes, ["scope": scope(owner)]) }
        var bodyRefusals = MetricFamily("touchline_http_body_refusals_total",
                                        help: "Request bodies refused from their head for the body budget, by reason (server_busy: "
                                            + "http.maxBufferedBodyBytes; key_body_budget_full: http.maxBufferedBodyBytesPerKey) and key scope.",
                                        kind: .counter)
        for (refusal, count) in figures.bodyRefusals.sorted(by: { ($0.key.code, scope($0.key.owner)) < ($1.key.code, scope($1.key.owner)) }) {
            bodyRefusals.add(count, ["reason": refusal.code, "scope": scope(refusal.owner)])
        }
        return [connections, refused, firstRequest, reclaimed, buffered, bodyRefusals]
    }
}
