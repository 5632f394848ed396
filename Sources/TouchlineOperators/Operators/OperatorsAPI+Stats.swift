import APNs
import TouchlineAccess
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// The figures of `GET /v1/stats` and `GET /v1/channels/{id}/stats` (served by ``OperatorsAPI``).
///
/// Channel figures cover the channels the key may see (a provider key sees its prefix). APNs
/// answers, pools, connections and the personal queue are the gateway's for an admin key, and
/// those of its own app for a provider key (one app's provider learns nothing of another's
/// traffic at Apple); the store's queues are the gateway's. The per-channel builder is
/// ``Channel/statsJSON(now:)``.
extension OperatorsAPI {
    /// The global figures for `key`; on the ingest loop, with the other loops' `loops`.
    func statsJSON(visibleTo key: GatewayConfiguration.APIKey, loops: LoopSnapshots) -> JSONValue {
        let loops = key.scope == .admin ? loops : loops.only(app: key.app)
        let now = clock.now()
        var byStatus = Dictionary(uniqueKeysWithValues: ChannelStatus.allCases.map { ($0, 0) })
        var totals = ChannelEngine.Counters()
        var duplicates = 0
        var pending = 0
        var appChannels: [String: [ChannelStatus: Int]] = [:]
        for channel in channels.values where APIAccess.allows(key, channel.id) {
            byStatus[channel.status, default: 0] += 1
            appChannels[channel.app, default: [:]][channel.status, default: 0] += 1
            let counters = channel.engine.counters
            totals.eventsApplied += counters.eventsApplied
            totals.stateChanges += counters.stateChanges
            totals.immediatePushes += counters.immediatePushes
            totals.powerConsideratePushes += counters.powerConsideratePushes
            totals.coalesced += counters.coalesced
            totals.rateLimitDeferrals += counters.rateLimitDeferrals
            totals.lowImportanceDeferrals += counters.lowImportanceDeferrals
            totals.reservedPushes += counters.reservedPushes
            totals.budgetDowngrades += counters.budgetDowngrades
            totals.throttled += counters.throttled
            totals.retries += counters.retries
            totals.dropped += counters.dropped
            duplicates += channel.activity.duplicateEvents
            if channel.engine.pendingState != nil { pending += 1 }
        }
        func integer(_ value: Int) -> JSONValue { .integer(Int64(value)) }
        let responses = (loops.broadcast.responses.map { $0 } + loops.personal.apns.responses.map { $0 })
            .sorted { ($0.key.pool, $0.key.status, $0.key.reason) < ($1.key.pool, $1.key.status, $1.key.reason) }
            .map { entry -> JSONValue in
                ["pool": .string(entry.key.pool), "status": .string(entry.key.status), "reason": .string(entry.key.reason),
                 "count": integer(entry.value)]
            }
        let personal = loops.personal
        func queued(_ pool: APNsSnapshot.Pool) -> JSONValue { integer(pool.stats.waiting + pool.stats.connections.reduce(0) { $0 + $1.queued }) }
        // Each app's channels, token and pools; the top-level queues are the `default` app's and the personal queue's.
        let apps = loops.broadcastSnapshots.map { snapshot -> JSONValue in
            let statuses = appChannels[snapshot.app] ?? [:]
            return .object([
                .init("app", .string(snapshot.app)),
                .init("channels", .object([.init("total", integer(statuses.values.reduce(0, +)))]
                    + ChannelStatus.allCases.map { .init($0.rawValue, integer(statuses[$0] ?? 0)) })),
                .init("providerTokenAgeSeconds", .number((now - snapshot.providerTokenIssuedAt).inSeconds)),
                .init("queues", .object(loops.apnsPools.filter { $0.app == snapshot.app }.map { .init("apns_\($0.name)", queued($0)) })),
            ])
        }
        let defaultPools = loops.broadcast.pools + personal.apns.pools
        return .object([
            .init("time", .integer(now.seconds)),
            .init("channels", .object([.init("total", integer(byStatus.values.reduce(0, +)))]
                + ChannelStatus.allCases.map { .init($0.rawValue, integer(byStatus[$0] ?? 0)) })),
            .init("events", ["received": integer(totals.eventsApplied), "duplicates": integer(duplicates),
                             "stateChanges": integer(totals.stateChanges),
                             "rejected": .object(service.metrics.rejectedEvents.sorted { $0.key < $1.key }.map { .init($0.key, integer($0.value)) })]),
            .init("pushes", ["byPriority": ["10": integer(totals.immediatePushes), "5": integer(totals.powerConsideratePushes)],
                             "coalesced": integer(totals.coalesced), "rateLimitDeferrals": integer(totals.rateLimitDeferrals),
                             "lowImportanceDeferrals": integer(totals.lowImportanceDeferrals), "reservedPushes": integer(totals.reservedPushes),
                             "budgetDowngrades": integer(totals.budgetDowngrades), "throttled": integer(totals.throttled),
                             "retried": integer(totals.retries), "dropped": integer(totals.dropped)]),
            .init("apns", ["mode": .string(apnsMode.rawValue), "responses": .array(responses),
                           "providerTokenAgeSeconds": .number((now - loops.broadcast.providerTokenIssuedAt).inSeconds)]),
            .init("queues", .object([.init("store", integer(store.queueDepth)), .init("personalStore", integer(personalStore.queueDepth)),
                                     .init("broadcastPending", integer(pending))]
                + defaultPools.map { .init("apns_\($0.name)", queued($0)) })),
            .init("connections", .array(loops.apnsPools.map(Self.poolJSON))),
            .init("apps", .array(apps)),
            .init("personal", ["jobsRunning": integer(personal.jobsRunning), "targetsPending": integer(personal.targetsPending),
                               "inFlight": integer(personal.inFlight), "tokensDeactivated": integer(personal.tokensDeactivated),
                               "retries": integer(personal.retries),
                               "deadLetters": .object(personal.deadLetters.sorted { $0.key < $1.key }.map { .init($0.key, integer($0.value)) })]),
        ])
    }

    /// A pool's connections (state, streams in flight, the server's current stream limit) and
    /// each connection slot's reconnect state: shared by `/v1/stats` and `/readyz`.
    static func poolJSON(_ pool: APNsSnapshot.Pool) -> JSONValue {
        .object([
            .init("app", .string(pool.app)),
            .init("pool", .string(pool.name)),
            .init("ready", .bool(pool.isReady)),
            .init("connections", .array(pool.stats.connections.map { connection in
                ["state": .string("\(connection.state)"), "inFlight": .integer(Int64(connection.inFlight)),
                 "queued": .integer(Int64(connection.queued)),
                 "maxConcurrentStreams": connection.remoteMaxConcurrentStreams == 0 ? .null : .integer(Int64(connection.remoteMaxConcurrentStreams))]
            })),
            .init("slots", .array(pool.stats.slots.map { slot in
                .object([.init("state", .string(slot.connectionState.map { "\($0)" } ?? "backing_off")),
                         .init("consecutiveFailures", .integer(Int64(slot.consecutiveFailures))),
                         .init("lastError", slot.lastError.map(JSONValue.string) ?? .null)])
            })),
            .init("waiting", .integer(Int64(pool.stats.waiting))),
            .init("connectionAttempts", .integer(Int64(pool.stats.connectionAttempts))),
        ])
    }
}
