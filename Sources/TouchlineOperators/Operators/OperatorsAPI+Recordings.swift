import TouchlineChannels
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
        return [running, limit, refused, finished, bytes, events] + quotaMetricFamilies()
    }

    /// The recording and shadow-channel quotas: what each key and the gateway hold, the share of
    /// each quota used (the alert `TouchlineRecordingQuotaNearlyFull` reads it), creates refused
    /// and recordings stopped.
    private func quotaMetricFamilies() -> [MetricFamily] {
        let ledger = service.recordingLedger
        let limits = ledger.limits
        var bytes = MetricFamily("touchline_recorded_bytes",
                                 help: "Bytes of recorded events (as posted) kept by the channels of each key (admin, or its prefix).",
                                 kind: .gauge)
        var shadows = MetricFamily("touchline_shadow_channels", help: "Shadow channels of each key (admin, or its prefix).", kind: .gauge)
        var used = MetricFamily("touchline_recording_quota_used_ratio",
                                help: "Share of each quota in use: recorded bytes and shadow channels (resource), of each key and of the gateway (quota).",
                                kind: .gauge)
        func ratio(_ value: Int, _ limit: Int) -> Double { limit == 0 ? (value > 0 ? 1 : 0) : Double(value) / Double(limit) }
        used.add(ratio(ledger.totalBytes, limits.maxRecordedBytes), ["resource": "bytes", "quota": "gateway"])
        used.add(ratio(ledger.totalShadowChannels, limits.maxShadowChannels), ["resource": "shadow_channels", "quota": "gateway"])
        for key in Set(ledger.bytesByKey.keys).union(ledger.shadowChannelsByKey.keys).sorted() {
            let (keyBytes, keyShadows) = (ledger.bytesByKey[key] ?? 0, ledger.shadowChannelsByKey[key] ?? 0)
            bytes.add(keyBytes, ["key": key])
            shadows.add(keyShadows, ["key": key])
            used.add(ratio(keyBytes, limits.maxRecordedBytesPerKey), ["resource": "bytes", "quota": "key", "key": key])
            used.add(ratio(keyShadows, limits.maxShadowChannelsPerKey), ["resource": "shadow_channels", "quota": "key", "key": key])
        }
        var quota = MetricFamily("touchline_recording_quota",
                                 help: "The quotas: recorded bytes and shadow channels (resource), per key and for the gateway (quota).",
                                 kind: .gauge)
        quota.add(limits.maxRecordedBytes, ["resource": "bytes", "quota": "gateway"])
        quota.add(limits.maxRecordedBytesPerKey, ["resource": "bytes", "quota": "key"])
        quota.add(limits.maxShadowChannels, ["resource": "shadow_channels", "quota": "gateway"])
        quota.add(limits.maxShadowChannelsPerKey, ["resource": "shadow_channels", "quota": "key"])
        var refused = MetricFamily("touchline_recording_quota_refusals_total",
                                   help: "Channel creates refused by a recording or shadow-channel quota, by error code.", kind: .counter)
        for code in ["recording_quota_exceeded", "gateway_recording_quota_exceeded", "shadow_channel_quota_exceeded",
                     "gateway_shadow_channel_quota_exceeded"] {
            refused.add(ledger.refusedCreates[code] ?? 0, ["reason": code])
        }
        var stopped = MetricFamily("touchline_recordings_stopped_total",
                                   help: "Recordings stopped short because a recording quota was reached (later events applied, not kept).",
                                   kind: .counter)
        stopped.add(ledger.stoppedByQuota)
        return [bytes, shadows, used, quota, refused, stopped]
    }
}
