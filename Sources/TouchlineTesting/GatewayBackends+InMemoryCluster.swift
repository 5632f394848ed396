import Touchline

extension Gateway.Backends {
    /// A gateway of the `jetstream` backend on `cluster` instead of NATS servers, sending to
    /// the in-memory APNs `apns`: several such gateways in one process share the cluster as they
    /// would share a real one. Configure `store` as for servers (their URLs are not used; the
    /// instance is the client's name for the cluster's switches).
    package static func inMemoryCluster(_ cluster: InMemoryNATSCluster, apns: InMemoryAPNsPair) -> Self {
        var backends = inMemoryCluster(cluster)
        backends.apns = { _ in { broadcastLoop, personalLoop in apns.make(broadcastLoop: broadcastLoop, personalLoop: personalLoop) } }
        return backends
    }

    /// A gateway of the `jetstream` backend on `cluster` that connects to APNs as its
    /// configuration says (a test's mock APNs over TLS): for cluster tests that read what the
    /// strict mock saw, without starting NATS servers.
    package static func inMemoryCluster(_ cluster: InMemoryNATSCluster) -> Self {
        Self(stores: standard.stores, apns: standard.apns,
             nats: { settings, _, _ in InMemoryJetStream(cluster.connect(name: settings.instance.description)) })
    }
}
