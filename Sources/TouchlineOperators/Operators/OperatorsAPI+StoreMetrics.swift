import TouchlineChannels
import TouchlineCore
import TouchlineStore

extension OperatorsAPI {
    /// The stores' health and the records the gateway could not restore, for `/metrics`.
    func storeMetricFamilies(brokenJobs: Int) -> [MetricFamily] {
        var writable = MetricFamily("touchline_store_writable",
                                    help: "1 while the store takes writes, 0 while it is failing (disk full, I/O error) and ingest answers 503.",
                                    kind: .gauge)
        writable.add(store.health.isFailing ? 0 : 1, ["store": "channels"])
        writable.add(personalStore.health.isFailing ? 0 : 1, ["store": "personal"])
        var damaged = MetricFamily("touchline_damaged_records",
                                   help: "Stored records that failed validation at start and are served as broken, by kind.",
                                   kind: .gauge)
        damaged.add(channels.values.count(where: { $0.damage != nil }), ["kind": "channel"])
        damaged.add(brokenJobs, ["kind": "personal_job"])
        return [writable, damaged]
    }
}
