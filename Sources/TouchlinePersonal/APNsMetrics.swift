import APNs
import HTTP2
import TouchlineCore

/// Counts and times the APNs answers of one ``APNsDispatch`` (its exchange observer), and
/// reads its pools' figures when metrics are collected.
///
/// Loop-confined to the dispatch's loop, like the client it observes: plain counters, no
/// locks. The ingest loop asks for a ``snapshot()`` with `execute` when `/metrics` or the stats
/// are requested (`@unchecked Sendable` only so that hand-off can capture it).
package final class APNsMetrics: @unchecked Sendable {
    /// The `app` label: the app whose pools these are (`default`, or one of `apps`).
    let app: String
    /// The `pool` label of the push pool's series (`broadcast` or `personal`).
    let pushPool: String
    /// Which of the connections' pools carries those pushes: broadcasts or device pushes.
    let pushPoolKind: APNsConnections.Pool
    /// The `pool` label of the management pool, or nil when that pool is not used (personal).
    let managementPool: String?
    private let apns: any APNsDispatch
    /// Counted by a key cheap to hash (no label text is made or hashed per answer: this runs on
    /// every push); the labels are written when a snapshot is taken.
    private var answers: [AnswerKey: Int] = [:]
    /// The push pool's 200s, the answer to nearly every push, counted apart from `answers`:
    /// no key is hashed for them.
    private var pushesAccepted = 0
    private var pushResponseTimes = Histogram()
    private var managementResponseTimes = Histogram()
    /// Told each answer that rejects the gateway's credentials (reason, pool): the webhook event.
    private let credentialsRejected: (@Sendable (String, String) -> Void)?

    /// Installs the observer on the connections' loop, ahead of any request handed to it later.
    package init(app: String = AppChannelID.defaultApp, apns: any APNsDispatch, pushPool: String, kind: APNsConnections.Pool, managementPool: String?,
         credentialsRejected: (@Sendable (String, String) -> Void)? = nil) {
        self.app = app
        self.apns = apns
        self.pushPool = pushPool
        pushPoolKind = kind
        self.managementPool = managementPool
        self.credentialsRejected = credentialsRejected
        apns.loop.execute { [self] in apns.observeExchanges { [self] in record($0) } }
    }

    /// An answer as counted: which pool, the HTTP status (nil: no answer came) and the reason.
    private struct AnswerKey: Hashable {
        var management: Bool
        var status: Int?
        var reason: String?
    }

    private func record(_ exchange: APNsExchange) {
        let management = exchange.endpoint == .channelManagement && managementPool != nil
        let key: AnswerKey
        switch exchange.outcome {
        case .answered(200, nil) where !management:
            pushesAccepted += 1
            pushResponseTimes.observe(exchange.duration.inSeconds)
            return
        case .answered(let status, let reason):
            key = AnswerKey(management: management, status: status, reason: reason)
            if status == 403, let reason, Self.credentialReasons.contains(reason) { credentialsRejected?(reason, poolLabel(management: management)) }
        case .noResponse(let kind): key = AnswerKey(management: management, status: nil, reason: kind)
        }
        answers[key, default: 0] += 1
        if management {
            managementResponseTimes.observe(exchange.duration.inSeconds)
        } else {
            pushResponseTimes.observe(exchange.duration.inSeconds)
        }
    }

    private func poolLabel(management: Bool) -> String { management ? managementPool ?? pushPool : pushPool }

    /// 403 reasons that say Apple does not accept the gateway's key, token or certificate (an
    /// operator must act); `ExpiredProviderToken` is not one, the client renews the token itself.
    static let credentialReasons: Set<String> = ["InvalidProviderToken", "MissingProviderToken", "BadCertificate", "BadCertificateEnvironment",
                                                 "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken", "TopicMismatch", "Forbidden"]

    /// The figures now (on the dispatch's loop).
    package func snapshot() -> APNsSnapshot {
        var pools: [APNsSnapshot.Pool] = []
        if let stats = apns.poolStats(pushPoolKind) { pools.append(.init(app: app, name: pushPool, stats: stats)) }
        if let managementPool, let stats = apns.poolStats(.management) { pools.append(.init(app: app, name: managementPool, stats: stats)) }
        let token = apns.credentialFigures()
        var responses: [APNsSnapshot.ResponseKey: Int] = [:]
        var counted = answers
        if pushesAccepted > 0 { counted[AnswerKey(management: false, status: 200, reason: nil), default: 0] += pushesAccepted }
        for (answer, count) in counted {
            let key = APNsSnapshot.ResponseKey(pool: poolLabel(management: answer.management), status: answer.status.map { String($0) } ?? "none",
                                               reason: answer.reason ?? "")
            responses[key, default: 0] += count
        }
        var responseTimes: [String: Histogram] = [:]
        // A pool's series appears with its first answer.
        if pushResponseTimes.count > 0 { responseTimes[pushPool] = pushResponseTimes }
        if managementResponseTimes.count > 0, let managementPool { responseTimes[managementPool] = managementResponseTimes }
        return APNsSnapshot(app: app, responses: responses, responseTimes: responseTimes, pools: pools,
                                   providerTokenIssuedAt: token.issuedAt, providerTokenStatistics: token.statistics,
                                   providerTokenRenewalHold: token.renewalHold, heldRequests: token.heldRequests)
    }
}

/// The APNs figures of one loop at one moment, carried to the ingest loop.
package struct APNsSnapshot: Sendable {
    package struct ResponseKey: Hashable, Sendable {
        package var pool: String
        /// The HTTP status, or `none` when no answer came.
        package var status: String
        /// APNs' reason (empty on success), or how the request failed without an answer.
        package var reason: String
    }

    package struct Pool: Sendable {
        /// The app the pool serves.
        package var app: String
        package var name: String
        package var stats: HTTP2ConnectionPool.Stats

        /// Connected, or still making its first connections without a failure: no back-off under way.
        package var isReady: Bool {
            stats.readyConnections > 0
                || stats.slots.contains { $0.connectionState == .connecting && $0.consecutiveFailures == 0 }
        }
    }

    /// The app whose requests these are.
    package var app: String
    package var responses: [ResponseKey: Int]
    package var responseTimes: [String: Histogram]
    package var pools: [Pool]
    package var providerTokenIssuedAt: UnixTime
    /// The app's token's counters (the same for every loop: an app has one token).
    package var providerTokenStatistics: ProviderToken.Statistics
    /// The end of the token's renewal hold in force, if any (APNs rejects it as expired, clock skew).
    package var providerTokenRenewalHold: UnixTime?
    /// Requests this loop's client holds until the token may be renewed.
    package var heldRequests: Int
}
