import TouchlineCore

/// What operators see of feed exports, recordings and shadow channels on `/metrics`: the export
/// pool (running, refused, finished, bytes written) and each bound it enforces
/// (docs/metrics.md, "Exports and recordings").
extension OperatorsAPI {
    func recordingMetricFamilies() -> [MetricFamily] {
        let exports = service.exports
        var running = MetricFamily("touchline_exports_running", help: "Feed exports running now (each on a thread of the export pool).",
                                   kind: .gauge)
        running.add(exports.runningTotal)
        var limit = MetricFamily("touchline_exports_limit",
                                 help: "The export pool's bounds: exports at once in the gateway (scope=\"gateway\") and per key (scope=\"key\").",
                                 kind: .gauge)
        limit.add(exports.limits.maxConcurrentExports, ["scope": "gateway"])
        limit.add(exports.limits.maxExportsPerKey, ["scope": "key"])
        var refused = MetricFamily("touchline_exports_refused_total",
                                   help: "Feed exports refused by the pool, by error code (too_many_exports: the key's limit; exports_busy: the gateway's).",
                                   kind: .counter)
        for reason in ["exports_busy", "too_many_exports"] { refused.add(exports.refused[reason] ?? 0, ["reason": reason]) }
        var finished = MetricFamily("touchline_exports_total",
                                    help: "Feed exports ended, by outcome (complete, client_gone, failed: the store could not be read).",
                                    kind: .counter)
        for outcome in ["complete", "client_gone", "failed"] { finished.add(exports.finished[outcome] ?? 0, ["outcome": outcome]) }
        var bytes = MetricFamily("touchline_exported_bytes_total", help: "Bytes of feed exports written to clients.", kind: .counter)
        bytes.add(exports.bytesWritten)
        var events = MetricFamily("touchline_exported_events_total", help: "Recorded events written by feed exports.", kind: .counter)
        events.add(exports.eventsWritten)
        return [running, limit, refused, finished, bytes, events]
    }
}
