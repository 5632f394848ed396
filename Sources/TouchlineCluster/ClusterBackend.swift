import Synchronization
import TouchlineAccess
import TouchlineChannels
import TouchlineConfiguration
import TouchlineCore
import TouchlineJetStream
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// A member of a JetStream cluster (the `jetstream` store backend, docs/cluster.md): the
/// partition logs and the shared token registry on the cluster's NATS servers (or the
/// in-memory cluster in tests: `nats` says how it is reached). It acts for the channels of the
/// partitions whose leases it holds, keeps new personal jobs in the cluster's job bucket, and
/// hands each request for a channel another gateway owns to that gateway.
package struct ClusterBackend: GatewayBackend {
    let settings: JetStreamSettings
    let nats: NATSConnector

    package init(settings: JetStreamSettings, nats: @escaping NATSConnector) {
        self.settings = settings
        self.nats = nats
    }

    /// The cluster node (connected, its store opened), then the stores on it.
    package func start(into services: GatewayServices, loops: GatewayLoops, configuration: GatewayConfiguration, clock: any WallClock,
               log: GatewayLog) throws -> any StartedBackend {
        let node = try services.start(ClusterNode.connect(settings, nats: nats, ingestLoop: loops.ingest, clock: clock, log: log.named("cluster")))
        let (stores, registry) = try Self.stores(node, configuration)
        let started = Started(node: node, stores: try services.start(stores), sharedRegistry: registry,
                              compactor: RegistryCompactor(registry: registry, fences: node.fences,
                                                           settings: RegistryCompactionSettings(entriesBetweenSnapshots: UInt64(settings.registrySnapshotEntries)),
                                                           loop: node.storeLoop, log: log.named("registry")))
        node.storeLoop.execute { started.compactor.start() }
        return started
    }

    private struct Started: StartedBackend {
        let node: ClusterNode
        let stores: GatewayStores
        let sharedRegistry: SharedTokenRegistry
        let compactor: RegistryCompactor

        var ownership: any ChannelOwnership { node }
        var recordings: any FeedRecordings { ClusterFeedRecordings(store: node.store) }
        var registry: any TokenRegistryCopy { sharedRegistry }
        var instanceName: String? { node.settings.instance.name }
        var operatorView: any BackendOperatorView { ClusterOperatorView(cluster: node, registry: sharedRegistry) }

        /// The cluster's job bucket; its slices run where their partitions are served, so the
        /// node tells it each change of the partitions held here.
        func jobBoard(queues: PerApp<PersonalDispatcher>, loop: EventLoop, outbox: WebhookOutbox?, clock: any WallClock,
                      log: GatewayLog) throws -> any PersonalJobBoard {
            let shared = try SharedJobs.start(on: node, loop: loop, queues: queues, store: stores.personal, reader: try stores.personalReader(),
                                              outbox: outbox, clock: clock, log: log)
            try node.ingestLoop.sync { [node] in
                node.partitionsChanged = { owned in loop.execute { shared.ownershipChanged(owned) } }
            }
            return shared
        }

        /// Owner-or-forward: a request for a channel of a partition served here is routed here,
        /// any other handed to the partition's owner (``ClusterNode/route(_:)``).
        func front(to router: APIRouter) -> @Sendable (HTTPRequest) -> Void {
            { [node] request in node.route(request) }
        }

        /// Owns nothing yet: partitions are taken up as their leases come. The jobs of this
        /// gateway's file resume at once with no channel open (the cluster's run as slices).
        func begin(service: ChannelService, router: APIRouter, reader: any ChannelStoreReader,
                   resumePersonalJobs: @escaping (Set<String>) -> Void) throws {
            resumePersonalJobs([])
            try node.start(service: service, router: router)
        }

        func release() {
            node.storeLoop.execute { [compactor] in compactor.stop() }
            node.close()
        }
    }

    /// The cluster's channel store, and the personal file in the data directory holding this
    /// gateway's copy of the shared token registry (brought up to the registry log's end while the
    /// gateway already serves its channels: ``SharedTokenRegistry/isCaughtUp``) and what it keeps to itself: jobs stored before it joined, dead letters,
    /// idempotency keys (docs/cluster.md, "The shared token registry", "Personal jobs on the cluster").
    static func stores(_ node: ClusterNode, _ configuration: GatewayConfiguration) throws -> (GatewayStores, SharedTokenRegistry) {
        let personalPath = configuration.dataDirectory + "/personal.sqlite"
        let personalFile = try StoreWriter(path: personalPath, niceness: Int32(configuration.personalQueue.niceness),
                                           faultFile: configuration.storeFaultFile)
        let registry: SharedTokenRegistry
        do {
            // Caught up in the background: a new gateway serves its channels at once while its copy
            // is built (docs/cluster.md, "The shared token registry").
            registry = try SharedTokenRegistry.open(jetStream: node.jetStream, layout: RegistryLogLayout(prefix: node.settings.prefix),
                                                    replicas: node.settings.replicas, maximumBytes: node.settings.limits.registryBytes,
                                                    snapshotMaximumBytes: node.settings.limits.registrySnapshotBytes,
                                                    local: personalFile, loop: node.storeLoop,
                                                    waitForCatchUp: false)
        } catch {
            personalFile.close()
            throw error
        }
        let store = node.store
        let stores = GatewayStores(channels: store, personal: registry,
                      channelReader: { store.openReader() }, personalReader: { try SQLiteTokenReader(path: personalPath) },
                      channelOutboxReader: { ServedOutboxReader(store.openReader(), layout: store.layout, served: { node.servedNow }) },
                      personalOutboxReader: { try SQLiteWebhookReader(path: personalPath) },
                      channelOutboxWrite: { operation, done in writeByPartition(operation, to: store, served: { node.servedNow }, done: done) })
        return (stores, registry)
    }

    /// Writes a webhook delivery's outbox operation to the cluster's channel store: outcomes as
    /// one batch per partition log (each event's outcome goes to the log that recorded it), those
    /// of partitions no longer served here dropped (their new owner delivers the event again:
    /// receivers drop repeats by event id). Done once every batch is; the first failure if any.
    private static func writeByPartition(_ operation: WebhookOperation, to store: JetStreamChannelStore, served: @Sendable () -> Set<Int>,
                                         done: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        guard case .updateDeliveries(let updates) = operation else { return store.submit(WriteBatch([.webhook(operation)]), completion: done) }
        let partitions = served()
        let byLog = Dictionary(grouping: updates) { store.layout.log(ofOutboxID: $0.outboxID) }.filter { log, _ in
            if case .partition(let partition) = log { partitions.contains(partition) } else { false }
        }
        guard !byLog.isEmpty else { return done(.success(())) }
        let outcome = Mutex<(waiting: Int, failure: StoreError?)>((byLog.count, nil))
        for part in byLog.values {
            store.submit(WriteBatch([.webhook(.updateDeliveries(part))])) { result in
                let finished = outcome.withLock { state -> (Bool, StoreError?) in
                    if case .failure(let error) = result, state.failure == nil { state.failure = error }
                    state.waiting -= 1
                    return (state.waiting == 0, state.failure)
                }
                guard finished.0 else { return }
                done(finished.1.map { .failure($0) } ?? .success(()))
            }
        }
    }

}

/// The shared registry, as this gateway's copy of it.
extension SharedTokenRegistry: TokenRegistryCopy {
    package var catchUpProgress: (applied: UInt64, target: UInt64) { (appliedSequence, catchUpTarget.load(ordering: .acquiring)) }
}

/// A cluster gateway's part in its cluster (the `jetstream` store backend).
extension ClusterNode: GatewayService {
    /// Gives its partitions up (the others take them over at once), once what it queued is
    /// stored; its connection closes with ``close()``, after the loops stopped.
    func shutdown(_ grace: ShutdownGrace) async {
        await DedicatedThread.run(name: "touchline-store-drain") { [store] in store.close() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            ingestLoop.execute { [self] in leave { done.resume() } }
        }
    }
}
