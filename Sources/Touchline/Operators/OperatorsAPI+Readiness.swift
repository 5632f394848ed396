import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `GET /readyz`'s report (served by ``OperatorsAPI``).
extension OperatorsAPI {
    /// Ready when both stores take writes (open, and not failing: see ``StoreHealth``), no
    /// APNs pool is backing off without a connection, and a cluster gateway is connected to its
    /// NATS cluster.
    func readinessJSON(_ loops: LoopSnapshots) -> (ready: Bool, body: JSONValue) {
        let writable = { (store: any DurableStoreWriter) in store.isOpen && !store.health.isFailing }
        let ready = writable(store) && writable(personalStore) && loops.apnsPools.allSatisfy(\.isReady) && (cluster?.isConnected ?? true)
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
        ] + (clusterJSON().map { [.init("cluster", $0)] } ?? [])))
    }
}
