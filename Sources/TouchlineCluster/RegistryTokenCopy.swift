import Foundation
import NATS
import TouchlineChannels
import TouchlineConfiguration
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// What both migrations (``ClusterMigration`` from a SQLite gateway, ``RegistryLayoutMigration``
/// from a cluster's shared registry) share: reaching the cluster, holding the partitioned
/// registry while nobody serves it, and copying a whole registry's file into a cluster's registry.
enum RegistryTokenCopy {
    /// Tokens read and submitted at a time.
    static let page = 1_000

    /// Runs `body` with a JetStream context on the cluster of `settings` (a loop of its own, a
    /// server release the gateway supports) once the cluster's partition count agrees with
    /// `settings`'; a failure to reach the cluster names its servers.
    static func onCluster<T>(_ settings: JetStreamSettings, _ body: (JetStream, EventLoop, ChannelPartitioning) throws -> T) throws -> T {
        guard let partitioning = ChannelPartitioning(count: settings.partitions) else {
            throw GatewayError.startup("store.partitions \(settings.partitions) is not a partition count")
        }
        let loop = EventLoop.start(name: "touchline-migrate")
        defer { loop.stopAndWait() }
        let connection: NATSConnection
        do {
            try NATSServerVersion.requireSupported(settings.servers, timeout: settings.natsSettings.connectTimeout)
            connection = try NATSConnection.connect(settings.natsSettings, loop: loop) { _ in }
        } catch {
            throw GatewayError.startup("cannot use the NATS cluster (store.servers \(settings.servers.joined(separator: ", "))): \(error)")
        }
        defer { connection.close() }
        let jetStream = try JetStream(connection)
        try ClusterDescriptor.agree(partitions: settings.partitions, prefix: settings.prefix, replicas: settings.replicas, jetStream: jetStream,
                                    loop: loop)
        return try body(jetStream, loop, partitioning)
    }

    /// The partitioned registry of the cluster with every partition taken up here, its
    /// partition files in `directory` (no gateway serves the registry while a migration copies:
    /// each takes its partitions over from their logs afterwards; see ``letGoOfEveryPartition(_:)``).
    /// `personalFile` takes what is not the registry's.
    static func partitionedStore(_ settings: JetStreamSettings, partitioning: ChannelPartitioning, personalFile: StoreWriter, directory: String,
                                 jetStream: JetStream, loop: EventLoop) throws -> PartitionedTokenStore {
        let layout = RegistryLogLayout(prefix: settings.prefix)
        try RegistryPartition.ensureLogs(count: partitioning.count, jetStream: jetStream, layout: layout, replicas: settings.replicas,
                                         maximumBytes: settings.limits.registryPartitionBytes(partitions: partitioning.count))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let registry = PartitionedRegistry(jetStream: jetStream, connection: jetStream.messaging, layout: layout,
                                           partitioning: TokenPartitioning(partitioning), directory: directory, fences: nil,
                                           keptFileLifetime: .zero, loop: loop)
        let store = PartitionedTokenStore(registry: registry, local: personalFile, loop: loop, clock: SystemClock())
        do {
            for partition in 0..<partitioning.count { try registry.takeUp(partition, under: Fence(Revision(0))) }
        } catch {
            store.close()
            throw error
        }
        return store
    }

    /// Lets every partition of `store` go, dropping their files: the gateways that own them read
    /// them from their logs.
    static func letGoOfEveryPartition(_ store: PartitionedTokenStore) {
        for partition in 0..<store.registry.partitioning.count { store.registry.letGo(partition) }
    }

    /// Copies every token `reader` holds, active or not, into `registry`, each in the state it
    /// has; answers how many. A registration replaces the user's earlier active token, so the
    /// deactivated tokens go first (each registered, then deactivated as it was) and the active
    /// ones after them.
    static func copyTokens(from reader: SQLiteTokenReader, to registry: any PersonalStoreWriter) throws -> Int {
        var copied = 0
        for active in [false, true] {
            var cursor: String?
            while case let page = try reader.tokens(after: cursor, limit: page), !page.isEmpty {
                cursor = page.last?.token
                let operations: [TokenOperation] = page.filter { $0.active == active }.flatMap { record -> [TokenOperation] in
                    guard !record.active else { return [.registerToken(record)] }
                    return [.registerToken(record),
                            .deactivateToken(record.token, unlessRegisteredAfter: record.registeredAt, at: record.deactivatedAt ?? record.registeredAt)]
                }
                guard !operations.isEmpty else { continue }
                try waitForCompletion { registry.submit(operations, completion: $0) }.get()
                copied += page.count(where: { $0.active == active })
            }
        }
        return copied
    }
}
