import TouchlineChannels
import TouchlineCore

/// The per-key limits' figures for `/metrics` (docs/metrics.md; the limits: docs/reliability.md,
/// "Per-key bounds"), read on the ingest loop where the limits are kept.
extension OperatorsAPI {
    func keyLimitMetricFamilies() -> [MetricFamily] {
        var refused = MetricFamily("touchline_key_limit_refusals_total",
                                   help: "Requests refused by a key's limits (keyLimits, followTopics), by the key's scope (admin or channel prefix) and the limit.",
                                   kind: .counter)
        for (refusal, count) in service.keyQuotas.refusals.sorted(by: { ($0.key.scope, $0.key.limit.rawValue) < ($1.key.scope, $1.key.limit.rawValue) }) {
            refused.add(count, ["scope": refusal.scope, "limit": refusal.limit.rawValue])
        }
        return [refused]
    }
}
