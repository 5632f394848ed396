import TouchlineChannels
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `GET /readyz`'s report (served by ``OperatorsAPI``).
extension OperatorsAPI {
    /// Ready when both stores take writes (open, and not failing: see ``StoreHealth``), no
    /// APNs pool of the `default` app or the personal queue is backing off without a
    /// connection, and a cluster gateway is connected to its NATS cluster and has its lease writes stored. Another app's pools
    /// show in `apps` with a readiness of their own but do not take the gateway out of service:
    /// that would stop every other app's traffic for one app's APNs trouble.
    func readinessJSON(_ loops: LoopSnapshots) -> (ready: Bool, body: JSONValue) {
        let writable = { (store: any DurableStoreWriter) in store.isOpen && !store.health.isFailing }
        let gatewayPools = loops.broadcast.pools + loops.personal.apns.pools
        let ready = writable(store) && writable(personalStore) && gatewayPools.allSatisfy(\.isReady) && backend.takesRequests
        let storeJSON = { (store: any DurableStoreWriter) -> JSONValue in
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
            .init("apps", .array(loops.broadcastSnapshots.map { snapshot in
                let pools = loops.apnsPools.filter { $0.app == snapshot.app }
                return ["app": .string(snapshot.app), "ready": .bool(pools.allSatisfy(\.isReady))]
            })),
        ] + (backend.readinessMember().map { [$0] } ?? [])))
    }
}
