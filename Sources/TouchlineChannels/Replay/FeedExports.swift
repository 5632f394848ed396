import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime

/// The feed exports running now, and who may start another: the export pool
/// (docs/api.md, "Export a recorded feed").
///
/// Each export runs on a thread of its own for as long as its client reads; without a bound,
/// every request would start one more. At most ``RecordingLimits/maxConcurrentExports`` run in
/// the gateway (one more is 503 `exports_busy`, a refusal for load, with `Retry-After`) and at
/// most ``RecordingLimits/maxExportsPerKey`` for one key (one more is 429 `too_many_exports`:
/// the key's own exports hold it up).
///
/// Confined to the ingest loop, where exports are admitted and where each one's end is reported.
package final class FeedExports: @unchecked Sendable {
    package let limits: RecordingLimits
    /// Exports running, by the key that asked (``GatewayConfiguration/APIKey/scopeLabel``).
    private(set) var running: [String: Int] = [:]
    /// Exports refused, by error code, for `/metrics`.
    package private(set) var refused: [String: Int] = [:]
    /// Exports finished, by outcome (`complete`, `client_gone`, `failed`), for `/metrics`.
    package private(set) var finished: [String: Int] = [:]
    /// Events and bytes written by finished and running exports, for `/metrics`.
    package var eventsWritten = 0
    package var bytesWritten = 0

    init(limits: RecordingLimits) {
        self.limits = limits
    }

    package var runningTotal: Int { running.values.reduce(0, +) }

    /// Admits one more export for `key`, or throws the refusal; the caller must call
    /// ``finish(_:outcome:)`` with the returned label once the export ends, whatever happens.
    func admit(_ key: GatewayConfiguration.APIKey) throws(HTTPError) -> String {
        let label = key.scopeLabel
        if running[label, default: 0] >= limits.maxExportsPerKey {
            refused["too_many_exports", default: 0] += 1
            throw HTTPError(status: 429, code: "too_many_exports",
                            message: "this API key runs \(limits.maxExportsPerKey) feed exports already, its limit (recordings.maxExportsPerKey); "
                                + "retry when one has finished", headers: [("Retry-After", "5")])
        }
        if runningTotal >= limits.maxConcurrentExports {
            refused["exports_busy", default: 0] += 1
            throw HTTPError(status: 503, code: "exports_busy",
                            message: "the gateway runs \(limits.maxConcurrentExports) feed exports already, its limit (recordings.maxConcurrentExports); "
                                + "retry shortly", headers: [("Retry-After", "5")])
        }
        running[label, default: 0] += 1
        return label
    }

    /// The export admitted for `label` has ended.
    func finish(_ label: String, outcome: String) {
        running[label, default: 1] -= 1
        if running[label] == 0 { running[label] = nil }
        finished[outcome, default: 0] += 1
    }
}

extension GatewayConfiguration.APIKey {
    /// The key as metrics, messages and per-key bounds name it (never its secret): `admin`, its
    /// channel prefix, or `app/prefix` for a key of another app than `default`.
    var scopeLabel: String {
        switch scope {
        case .admin: "admin"
        case .channelPrefix(let prefix) where app == AppChannelID.defaultApp: prefix
        case .channelPrefix(let prefix): "\(app)/\(prefix)"
        }
    }
}
