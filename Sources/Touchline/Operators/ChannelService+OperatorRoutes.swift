import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The operator endpoints outside `/v1`: `GET /metrics` (Prometheus text), `GET /healthz`
/// (the process serves) and `GET /readyz` (the store is open and every APNs pool is connected,
/// or making its first connection without a failure).
///
/// `/healthz` and `/readyz` never need a key (probes and load balancers carry none); `/metrics`
/// needs one only with `metrics.requireKey`.
extension ChannelService {
    func addOperatorRoutes(to router: inout APIRouter) {
        router.add(.get, "/metrics", scope: metricsSettings.requireKey ? .anyKey : .open) { [self] call throws(HTTPError) in
            gatherLoopSnapshots { [self] loops in
                let respond: @Sendable ([MetricFamily]) -> Void = { [self] webhookFamilies in
                    let text = PrometheusTextEncoder.encode(metricFamilies(loops) + storeMetricFamilies() + webhookFamilies)
                    call.respond(HTTPResponse(status: 200, headers: [("Content-Type", PrometheusTextEncoder.contentType)],
                                              body: Array(text.utf8)))
                }
                guard let webhooks else { return respond([]) }
                webhooks.snapshot { [self] snapshot in loop.execute { [self] in respond(webhookMetricFamilies(snapshot)) } }
            }
        }
        router.add(.get, "/healthz", scope: .open) { call throws(HTTPError) in
            call.respond(.json(status: 200, ["status": "alive"]))
        }
        router.add(.get, "/readyz", scope: .open) { [self] call throws(HTTPError) in
            gatherLoopSnapshots { [self] loops in
                let readiness = readinessJSON(loops)
                call.respond(.json(status: readiness.ready ? 200 : 503, readiness.body))
            }
        }
    }

    /// Ready when both stores take writes (open, and not failing: see ``StoreHealth``) and no
    /// APNs pool is backing off without a connection.
    func readinessJSON(_ loops: LoopSnapshots) -> (ready: Bool, body: JSONValue) {
        let writable = { (store: StoreWriter) in store.isOpen && !store.health.isFailing }
        let ready = writable(store) && writable(personalStore) && loops.apnsPools.allSatisfy(\.isReady)
        let storeJSON = { (store: StoreWriter) -> JSONValue in
            let health = store.health
            var members: [JSONValue.Member] = [
                .init("open", .bool(store.isOpen)), .init("writable", .bool(!health.isFailing)),
                .init("queueDepth", .integer(Int64(store.queueDepth))),
                .init("failedBatches", .integer(Int64(store.statistics.failedBatches))),
            ]
            if let failure = health.failure { members.append(.init("failure", .string(failure.description))) }
            if let since = health.failingSince { members.append(.init("failingSince", .integer(since.seconds))) }
            return .object(members)
        }
        return (ready, .object([
            .init("status", .string(ready ? "ready" : "not_ready")),
            .init("apnsMode", .string(apnsMode.rawValue)),
            .init("store", storeJSON(store)),
            .init("personalStore", storeJSON(personalStore)),
            .init("apnsPools", .array(loops.apnsPools.map(Self.poolJSON))),
        ]))
    }
}
