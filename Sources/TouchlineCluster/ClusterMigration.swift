import Foundation
import NATS
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// `touchline migrate`: copies what a gateway on SQLite holds into a cluster, so the gateways
/// started on the cluster go on where it stopped (docs/scale-out.md, "Moving from one SQLite
/// gateway").
///
/// - **Channels** with everything their record holds (APNs channel id, status, content-state,
///   last `seq`, the engine's snapshot and counters) and their stored events go to their
///   partitions' logs, through the channel store a gateway writes with. A channel the cluster
///   already has is left as it is and counted: running it again copies nothing twice.
/// - **Tokens**, active or not, go to the cluster's registry as `store.registry` says: the shared
///   registry log, or the partitions' logs (every partition taken up by the migration while it
///   copies, then let go). Each registration replaces the user's earlier active token, so the
///   deactivated ones go first (each registered, then deactivated as it was) and the active
///   ones after them: every token arrives in the state it had.
/// - **Open jobs** (pending and running, with the retries they wait for) go to the personal file
///   of the gateway whose configuration is given, which runs them when it starts: personal jobs
///   run where they are stored (docs/cluster.md, "Status"). A cluster holding its registry
///   partitioned cannot run a file's job (it walks the whole registry from one reader): there,
///   a source with open jobs is refused before anything is copied. Dead letters and
///   idempotency keys are not copied.
///
/// Blocking; run it before the cluster's gateways serve the channels, and never beside a
/// gateway on the same data directory.
package struct ClusterMigration {
    package struct Summary: Sendable, Equatable, CustomStringConvertible {
        package var channels = 0
        package var channelsAlreadyThere = 0
        package var events = 0
        package var tokens = 0
        package var jobs = 0
        package var jobsAlreadyThere = 0

        package init(channels: Int = 0, channelsAlreadyThere: Int = 0, events: Int = 0, tokens: Int = 0, jobs: Int = 0, jobsAlreadyThere: Int = 0) {
            (self.channels, self.channelsAlreadyThere, self.events) = (channels, channelsAlreadyThere, events)
            (self.tokens, self.jobs, self.jobsAlreadyThere) = (tokens, jobs, jobsAlreadyThere)
        }

        package var description: String {
            "copied \(channels) channels (\(channelsAlreadyThere) already in the cluster, left as they were), \(events) events, "
                + "\(tokens) tokens and \(jobs) open jobs (\(jobsAlreadyThere) already there)"
        }
    }

    /// Events per logged batch at most, and their bytes (a batch is one message of the log).
    static let eventsPerBatch = 500
    static let batchBytes = 256 * 1_024

    let source: String
    let settings: JetStreamSettings
    let dataDirectory: String

    /// `source`: the SQLite gateway's data directory; `settings` and `dataDirectory`: the cluster
    /// and the data directory of the cluster gateway that takes the open jobs.
    package init(source: String, settings: JetStreamSettings, dataDirectory: String) {
        self.source = source
        self.settings = settings
        self.dataDirectory = dataDirectory
    }

    package func run() throws -> Summary {
        let channelsPath = source + "/touchline.sqlite"
        let personalPath = source + "/personal.sqlite"
        for path in [channelsPath, personalPath] where !FileManager.default.fileExists(atPath: path) {
            throw GatewayError.startup("\(path) does not exist: --from names the data directory of a gateway on SQLite")
        }
        return try RegistryTokenCopy.onCluster(settings) { jetStream, loop, partitioning in
            try copy(channelsPath: channelsPath, personalPath: personalPath, jetStream: jetStream, loop: loop, partitioning: partitioning)
        }
    }

    private func copy(channelsPath: String, personalPath: String, jetStream: JetStream, loop: EventLoop,
                      partitioning: ChannelPartitioning) throws -> Summary {
        try refuseOpenJobsForPartitionedRegistry(personalPath)
        var summary = Summary()
        let channels = try JetStreamChannelStore.open(jetStream: jetStream, layout: ChannelLogLayout(prefix: settings.prefix, partitioning: partitioning),
                                                      replicas: settings.replicas, limits: settings.limits.channelLogs, loop: loop)
        defer { channels.close() }
        let channelReader = try SQLiteChannelReader(path: channelsPath)
        defer { channelReader.close() }
        try copyChannels(from: channelReader, to: channels, summary: &summary)

        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        try ClusterDescriptor.agree(registry: settings.registry.rawValue, prefix: settings.prefix, replicas: settings.replicas,
                                    jetStream: jetStream, loop: loop)
        let personalFile = try StoreWriter(path: dataDirectory + "/personal.sqlite")
        let registry: any PersonalStoreWriter
        do {
            registry = try personalStore(over: personalFile, partitioning: partitioning, jetStream: jetStream, loop: loop)
        } catch {
            personalFile.close()
            throw error
        }
        defer { registry.close() }
        let personalReader = try SQLiteTokenReader(path: personalPath)
        defer { personalReader.close() }
        summary.tokens = try RegistryTokenCopy.copyTokens(from: personalReader, to: registry)
        try copyOpenJobs(from: personalReader, to: registry, summary: &summary)
        if let partitioned = registry as? PartitionedTokenStore { RegistryTokenCopy.letGoOfEveryPartition(partitioned) }
        return summary
    }

    /// A job of a gateway's own file walks the whole registry from one reader; on a partitioned
    /// registry each gateway reads only its own partitions, so such a job could not run there.
    /// Refused before anything is copied, naming what to do.
    private func refuseOpenJobsForPartitionedRegistry(_ personalPath: String) throws {
        guard settings.registry == .partitioned else { return }
        let reader = try SQLiteTokenReader(path: personalPath)
        defer { reader.close() }
        let open = try [PersonalJobStatus.pending, .running].map { try reader.jobs(status: $0, limit: 1_000).count }.reduce(0, +)
        guard open > 0 else { return }
        throw GatewayError.startup("\(personalPath) holds \(open) open personal job\(open == 1 ? "" : "s"), which a cluster holding its registry partitioned cannot run from a gateway's file: let them finish on the SQLite gateway (or cancel them), then migrate; nothing was copied")
    }

    /// The cluster's personal store as a gateway on `personalFile` writes it: the shared
    /// registry, or the partitioned one with every partition taken up here while the tokens are
    /// copied (no gateway serves them yet; each takes its partitions over from their logs).
    private func personalStore(over personalFile: StoreWriter, partitioning: ChannelPartitioning, jetStream: JetStream,
                               loop: EventLoop) throws -> any PersonalStoreWriter {
        switch settings.registry {
        case .shared:
            return try SharedTokenRegistry.open(jetStream: jetStream, layout: RegistryLogLayout(prefix: settings.prefix), replicas: settings.replicas,
                                                maximumBytes: settings.limits.registryBytes,
                                                snapshotMaximumBytes: settings.limits.registrySnapshotBytes, local: personalFile, loop: loop)
        case .partitioned:
            return try RegistryTokenCopy.partitionedStore(settings, partitioning: partitioning, personalFile: personalFile,
                                                          directory: dataDirectory + "/registry", jetStream: jetStream, loop: loop)
        }
    }

    private func copyChannels(from reader: SQLiteChannelReader, to store: JetStreamChannelStore, summary: inout Summary) throws {
        var cursor: String?
        while case let page = try reader.channels(after: cursor, limit: RegistryTokenCopy.page), !page.isEmpty {
            cursor = page.last?.id
            for record in page {
                if let problem = record.unreadable {
                    throw GatewayError.startup("channel \(record.id) cannot be read in \(source)/touchline.sqlite (\(problem)); nothing after it was copied")
                }
                guard try wait({ store.createChannel(record, completion: $0) }).inserted else {
                    summary.channelsAlreadyThere += 1
                    continue
                }
                summary.channels += 1
                summary.events += try copyEvents(of: record.id, recorded: FeedRecording.isRecorded(record), from: reader, to: store)
            }
        }
    }

    /// Copies the channel's events: a recording's to the cluster's recordings, the others' (the
    /// last batch's, not yet covered by the saved state) to its log.
    private func copyEvents(of channelID: String, recorded: Bool, from reader: SQLiteChannelReader, to store: JetStreamChannelStore) throws -> Int {
        let operation: ([StoredEvent]) -> StoreOperation = { recorded ? .recordEvents($0) : .appendEvents($0) }
        var copied = 0
        var afterSeq: Int64 = 0
        while case let events = try reader.events(channelID: channelID, afterSeq: afterSeq, limit: Self.eventsPerBatch), !events.isEmpty {
            afterSeq = events.last?.seq ?? afterSeq
            var batch: [StoredEvent] = []
            var bytes = 0
            for event in events {
                if !batch.isEmpty, bytes + event.body.count > Self.batchBytes {
                    try wait { store.submit(WriteBatch([operation(batch)]), completion: $0) }
                    batch = []
                    bytes = 0
                }
                batch.append(event)
                bytes += event.body.count
            }
            try wait { store.submit(WriteBatch([operation(batch)]), completion: $0) }
            copied += events.count
        }
        return copied
    }

    private func copyOpenJobs(from reader: SQLiteTokenReader, to registry: any PersonalStoreWriter, summary: inout Summary) throws {
        for status in [PersonalJobStatus.pending, .running] {
            for job in try reader.jobs(status: status, limit: 100_000) {
                let retries = try reader.retriesDue(jobID: job.id, at: UnixTime(nanoseconds: .max), limit: 1_000_000)
                let copied = waitForCompletion { registry.submit([.createJob(job)] + retries.map { .scheduleRetry($0) }, completion: $0) }
                switch copied {
                case .success: summary.jobs += 1
                case .failure(let error) where !error.isStorageFailure: summary.jobsAlreadyThere += 1
                case .failure(let error): throw error
                }
            }
        }
    }

    private func wait<T: Sendable>(_ start: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) throws -> T {
        try waitForCompletion(start).get()
    }
}
