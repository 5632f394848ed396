import Foundation
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
        let (stores, registry) = try Self.stores(node, configuration, clock: clock, log: log.named("registry"))
        var compactor: RegistryCompactor?
        if case .shared(let shared) = registry {
            compactor = RegistryCompactor(registry: shared, fences: node.fences,
                                          settings: RegistryCompactionSettings(entriesBetweenSnapshots: UInt64(settings.registrySnapshotEntries)),
                                          loop: node.storeLoop, log: log.named("registry"))
        }
        let started = Started(node: node, stores: try services.start(stores), clusterRegistry: registry, compactor: compactor)
        if let compactor { node.storeLoop.execute { compactor.start() } }
        return started
    }

    private struct Started: StartedBackend {
        let node: ClusterNode
        let stores: GatewayStores
        let clusterRegistry: ClusterRegistry
        /// The shared registry's snapshots (a partitioned registry's partitions take their own).
        let compactor: RegistryCompactor?

        var ownership: any ChannelOwnership { node }
        var recordings: any FeedRecordings { ClusterFeedRecordings(store: node.store) }
        var registry: any TokenRegistryCopy { clusterRegistry.copy }
        var instanceName: String? { node.settings.instance.name }
        var operatorView: any BackendOperatorView { ClusterOperatorView(cluster: node, registry: clusterRegistry) }

        func tokenLookups(reader: any TokenRegistryReader, loop: EventLoop) -> any TokenLookups {
            clusterRegistry.lookups(reader: reader, loop: loop)
        }

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
            if let compactor { node.storeLoop.execute { compactor.stop() } }
            node.close()
        }
    }

    /// The cluster's channel store, and the personal file in the data directory holding what
    /// this gateway keeps to itself (jobs stored before it joined, dead letters, idempotency
    /// keys) and, with the shared registry, its copy of the registry (brought up to the
    /// registry log's end while the gateway already serves its channels:
    /// ``SharedTokenRegistry/isCaughtUp``); with the partitioned registry, the partitions it
    /// owns are files of their own under `registry/` (docs/cluster.md, "The shared token
    /// registry", "The partitioned token registry", "Personal jobs on the cluster").
    static func stores(_ node: ClusterNode, _ configuration: GatewayConfiguration, clock: any WallClock,
                       log: GatewayLog) throws -> (GatewayStores, ClusterRegistry) {
        let settings = node.settings
        try ClusterDescriptor.agree(registry: settings.registry.rawValue, prefix: settings.prefix, replicas: settings.replicas,
                                    jetStream: node.jetStream, loop: node.storeLoop)
        let personalPath = configuration.dataDirectory + "/personal.sqlite"
        // A gateway that held the shared registry keeps a whole copy there, never read again.
        if settings.registry == .partitioned, case let removed = try WholeRegistryCopy.remove(from: personalPath), removed > 0 {
            log.notice("removed the shared registry's whole copy (\(removed) tokens) from \(personalPath): the cluster holds its registry partitioned")
        }
        let personalFile = try StoreWriter(path: personalPath, niceness: Int32(configuration.personalQueue.niceness),
                                           faultFile: configuration.storeFaultFile)
        let registry: ClusterRegistry
        do {
            registry = try Self.registry(node, configuration, personalFile: personalFile, clock: clock)
        } catch {
            personalFile.close()
            throw error
        }
        let store = node.store
        let stores = GatewayStores(channels: store, personal: registry.store,
                      channelReader: { store.openReader() }, personalReader: { try registry.personalReader(file: personalPath) },
                      channelOutboxReader: { ServedOutboxReader(store.openReader(), layout: store.layout, served: { node.servedNow }) },
                      personalOutboxReader: { try SQLiteWebhookReader(path: personalPath) },
                      channelOutboxWrite: { operation, done in writeByPartition(operation, to: store, served: { node.servedNow }, done: done) })
        return (stores, registry)
    }

    /// The registry as `store.registry` says: the shared one's copy in `personalFile`, caught up
    /// in the background (a new gateway serves its channels at once while its copy is built), or
    /// the partitioned one's logs, taken up with the node's leases.
    private static func registry(_ node: ClusterNode, _ configuration: GatewayConfiguration, personalFile: StoreWriter,
                                 clock: any WallClock) throws -> ClusterRegistry {
        let settings = node.settings
        let layout = RegistryLogLayout(prefix: settings.prefix)
        switch settings.registry {
        case .shared:
            return .shared(try SharedTokenRegistry.open(jetStream: node.jetStream, layout: layout, replicas: settings.replicas,
                                                        maximumBytes: settings.limits.registryBytes,
                                                        snapshotMaximumBytes: settings.limits.registrySnapshotBytes,
                                                        local: personalFile, loop: node.storeLoop, waitForCatchUp: false))
        case .partitioned:
            try RegistryPartition.ensureLogs(count: settings.partitions, jetStream: node.jetStream, layout: layout, replicas: settings.replicas,
                                             maximumBytes: settings.limits.registryPartitionBytes(partitions: settings.partitions))
            let directory = configuration.dataDirectory + "/registry"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let partitioned = PartitionedRegistry(jetStream: node.jetStream, connection: node.connection, layout: layout,
                                                  partitioning: TokenPartitioning(node.partitioning), directory: directory, fences: node.fences,
                                                  niceness: Int32(configuration.personalQueue.niceness), loop: node.storeLoop)
            node.registryPartitions = partitioned
            return .partitioned(PartitionedTokenStore(registry: partitioned, local: personalFile, loop: node.storeLoop, clock: clock))
        }
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
