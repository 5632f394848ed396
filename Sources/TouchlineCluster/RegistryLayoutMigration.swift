import Foundation
import NATS
import Synchronization
import TouchlineChannels
import TouchlineConfiguration
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// `touchline migrate --shared-registry`: moves a cluster's token registry from the shared
/// layout (one log, a whole copy on every gateway) to the partitioned one, keeping every token
/// in the state it has (docs/scale-out.md, "From the shared registry to the partitioned one").
///
/// With every gateway of the cluster stopped:
/// 1. refused while the lease bucket is still written (a gateway runs), and while the job
///    bucket holds open jobs (their slices were cut for the shared registry);
/// 2. the whole registry is built from the shared log (its newest snapshot, then the entries
///    after it) into a scratch file;
/// 3. its tokens go to the partitions' logs, every partition taken up here meanwhile; what the
///    partitions then hold is counted against the copy;
/// 4. the cluster's record of the layout becomes `partitioned`, by compare-and-set: from then
///    on gateways set to `shared` are refused, and those set to `partitioned` start;
/// 5. the shared log and its snapshots are purged.
///
/// Each step before 4 changes nothing a gateway set to `shared` reads, so a migration stopped
/// before it leaves the cluster as it was, and run again copies the tokens again (registering a
/// token as it is changes nothing). One stopped after 4 is finished by running it again.
package struct RegistryLayoutMigration {
    package struct Summary: Sendable, Equatable, CustomStringConvertible {
        package enum Outcome: Sendable, Equatable {
            /// The tokens were copied and the layout recorded.
            case migrated
            /// The cluster already held its registry partitioned: what was left of the shared log went.
            case alreadyPartitioned
            /// The cluster has no shared registry to migrate.
            case nothingToMigrate
        }

        package var outcome: Outcome
        package var tokens = 0
        package var activeTokens = 0
        /// Messages purged from the shared log and its snapshots.
        package var purged: UInt64 = 0

        package var description: String {
            switch outcome {
            case .migrated:
                "copied \(tokens) tokens (\(activeTokens) active) from the shared registry into the partitions, recorded the registry as partitioned "
                    + "and purged \(purged) messages of the shared log: start the gateways with store.registry \"partitioned\""
            case .alreadyPartitioned:
                "the cluster already holds its registry partitioned; purged \(purged) messages left of the shared log"
            case .nothingToMigrate:
                "the cluster holds no shared token registry: nothing to migrate"
            }
        }
    }

    let settings: JetStreamSettings
    let scratch: String
    /// How long the lease bucket must stay unwritten for the migration to hold every gateway
    /// stopped: a running gateway renews its heartbeat well within its member TTL.
    let quietPeriod: Duration

    /// Runs after the tokens were copied, before the layout is recorded (tests start a gateway there).
    package var beforeRecordingLayout: () throws -> Void = {}

    /// `dataDirectory`: where the scratch files go (removed at the end).
    package init(settings: JetStreamSettings, dataDirectory: String) {
        self.settings = settings
        scratch = dataDirectory + "/registry-migration"
        quietPeriod = settings.leases.memberTTL + .seconds(1)
    }

    package func run() throws -> Summary {
        guard settings.registry == .partitioned else {
            throw GatewayError.startup(#"store.registry is "shared": set it to "partitioned", the layout the shared registry is moved into"#)
        }
        return try RegistryTokenCopy.onCluster(settings, migrate)
    }

    private func migrate(jetStream: JetStream, loop: EventLoop, partitioning: ChannelPartitioning) throws -> Summary {
        let layout = RegistryLogLayout(prefix: settings.prefix)
        let recorded = try ClusterDescriptor.recordedRegistry(prefix: settings.prefix, jetStream: jetStream)
        let sharedLog = try Self.state(of: layout.streamName, jetStream)
        switch recorded?.layout {
        case "partitioned"?:
            return Summary(outcome: .alreadyPartitioned, purged: try purgeSharedLog(layout, jetStream: jetStream, loop: loop))
        case nil, "shared"?:
            guard sharedLog != nil else { return Summary(outcome: .nothingToMigrate) }
        case let other?:
            throw GatewayError.startup("the cluster (prefix \(settings.prefix)) records its registry as \"\(other.prefix(32))\", a layout this build does not know")
        }
        let leasesQuietAt = try refuseWhileAGatewayRuns(jetStream)
        try refuseOpenJobs(jetStream, loop: loop)

        try? FileManager.default.removeItem(atPath: scratch)
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let wholePath = scratch + "/whole.sqlite"
        let copied = try buildWholeCopy(at: wholePath, layout: layout, jetStream: jetStream, loop: loop)
        var summary = Summary(outcome: .migrated)
        try copyIntoPartitions(from: wholePath, partitioning: partitioning, jetStream: jetStream, loop: loop, summary: &summary)
        try beforeRecordingLayout()
        try refuseIfMoved(leases: leasesQuietAt, sharedLog: copied, layout: layout, jetStream: jetStream)
        try ClusterDescriptor.changeRegistry(to: JetStreamSettings.RegistryLayout.partitioned.rawValue, replacing: recorded?.sequence,
                                             prefix: settings.prefix, replicas: settings.replicas, jetStream: jetStream, loop: loop)
        summary.purged = try purgeSharedLog(layout, jetStream: jetStream, loop: loop)
        return summary
    }

    /// A gateway renews its heartbeat in the lease bucket well within its member TTL: a bucket
    /// written during ``quietPeriod`` has a gateway running, which would go on writing to the
    /// shared log (or serving jobs) while it is copied.
    ///
    /// Answers the bucket's last sequence, seen unchanged for ``quietPeriod`` (0: no bucket).
    private func refuseWhileAGatewayRuns(_ jetStream: JetStream) throws -> UInt64 {
        guard let before = try lastSequence(of: leaseStream, jetStream) else { return 0 }
        Thread.sleep(forTimeInterval: quietPeriod.inSeconds)
        let after = try lastSequence(of: leaseStream, jetStream)
        guard after != before else { return before }
        throw GatewayError.startup("a gateway runs on this cluster (its lease bucket \(leaseStream) was written within \(quietPeriod)): stop every gateway of the cluster, then migrate; nothing was changed")
    }

    /// Right before the layout is recorded: a gateway started since the quiet check (the lease
    /// bucket written), or a write to the shared log since the copy was built, would be lost by
    /// the change; the migration stops instead, the layout unchanged. What is left is the moment
    /// between this check and the record's write.
    private func refuseIfMoved(leases quietAt: UInt64, sharedLog copied: UInt64, layout: RegistryLogLayout, jetStream: JetStream) throws {
        let leases = try lastSequence(of: leaseStream, jetStream) ?? 0
        let log = try lastSequence(of: layout.streamName, jetStream) ?? 0
        guard leases == quietAt, log == copied else {
            throw GatewayError.startup("the cluster moved during the migration (\(leases == quietAt ? "the shared log was written after sequence \(copied)" : "a gateway started")): stop every gateway of the cluster, then run the migration again; the layout was not changed")
        }
    }

    private var leaseStream: String { "KV_" + PartitionLeaseKeeper.bucketName(prefix: settings.prefix) }

    private func lastSequence(of stream: String, _ jetStream: JetStream) throws -> UInt64? {
        try Self.state(of: stream, jetStream)?.lastSequence
    }

    /// The stream's state (nil: no such stream), asked again while the cluster forms.
    private static func state(of stream: String, _ jetStream: JetStream) throws -> JetStream.StreamState? {
        try JetStream.retryingWhileForming { () throws(NATSError) in try jetStream.streamState(stream) }
    }

    /// Jobs of the job bucket not finished yet were cut for the shared registry (each slice a
    /// share of the whole registry read from one gateway's copy), which no gateway holds after
    /// the migration: refused, naming them, before anything is copied.
    private func refuseOpenJobs(_ jetStream: JetStream, loop: EventLoop) throws {
        let bucket = SharedJobBoard.bucketName(prefix: settings.prefix)
        let subject = "$KV.\(bucket).job.>"
        guard try Self.state(of: "KV_" + bucket, jetStream) != nil,
              try jetStream.messageCount(stream: "KV_" + bucket, subject: subject) > 0 else { return }
        let entries = Mutex<(open: [String], done: Bool)>(([], false))
        let read = DispatchSemaphore(value: 0)
        let watch = try jetStream.subscribeOrdered(to: subject, from: .lastPerSubject, loop: loop, window: nil) { message in
            // A deleted or purged key is no job; one that cannot be read is taken for open.
            let isJob = message.headers["KV-Operation"] == nil && !message.payload.isEmpty
            let entry = isJob ? try? JSONDecoder().decode(SharedJobEntry.self, from: Data(message.payload)) : nil
            entries.withLock { state in
                if let entry, entry.finished == nil, entry.withdrawn != true { state.open.append(entry.id) }
                if isJob, entry == nil { state.open.append(message.subject.dropFirst("$KV.\(bucket).job.".count) + " (unreadable)") }
                if message.stream?.pending == 0, !state.done {
                    state.done = true
                    read.signal()
                }
            }
        }
        defer { watch.cancel() }
        guard read.wait(timeout: .now() + .seconds(30)) == .success else {
            throw GatewayError.startup("the job bucket \(bucket) could not be read within 30 s; nothing was changed")
        }
        let open = entries.withLock { $0.open }
        guard !open.isEmpty else { return }
        throw GatewayError.startup("the cluster holds \(open.count) open personal job\(open.count == 1 ? "" : "s") (\(open.prefix(5).joined(separator: ", "))), cut for the shared registry: let them finish (or cancel them) on the gateways set to \"shared\", then migrate; nothing was changed")
    }

    /// The shared registry as a gateway's copy holds it: its newest snapshot, then the log after
    /// it. Answers the log sequence the copy holds.
    private func buildWholeCopy(at path: String, layout: RegistryLogLayout, jetStream: JetStream, loop: EventLoop) throws -> UInt64 {
        let file = try StoreWriter(path: path)
        let shared: SharedTokenRegistry
        do {
            shared = try SharedTokenRegistry.open(jetStream: jetStream, layout: layout, replicas: settings.replicas,
                                                  maximumBytes: settings.limits.registryBytes,
                                                  snapshotMaximumBytes: settings.limits.registrySnapshotBytes, local: file, loop: loop)
        } catch {
            file.close()
            throw error
        }
        let copied = shared.appliedSequence
        shared.close()
        return copied
    }

    /// Copies the whole copy's tokens into the partitions, then checks that the partitions hold
    /// as many tokens, and as many active ones, before letting them go.
    private func copyIntoPartitions(from wholePath: String, partitioning: ChannelPartitioning, jetStream: JetStream, loop: EventLoop,
                                    summary: inout Summary) throws {
        // The copy's lists hold registry operations only: this file takes nothing of them.
        let personalFile = try StoreWriter(path: scratch + "/personal.sqlite")
        let store: PartitionedTokenStore
        do {
            store = try RegistryTokenCopy.partitionedStore(settings, partitioning: partitioning, personalFile: personalFile,
                                                           directory: scratch + "/partitions", jetStream: jetStream, loop: loop)
        } catch {
            personalFile.close()
            throw error
        }
        defer {
            RegistryTokenCopy.letGoOfEveryPartition(store)
            store.close()
        }
        let whole = try SQLiteTokenReader(path: wholePath)
        defer { whole.close() }
        summary.tokens = try RegistryTokenCopy.copyTokens(from: whole, to: store)
        let expected = try Self.counts(of: [wholePath])
        let paths = (0..<partitioning.count).compactMap { store.registry.path(of: $0) }
        guard paths.count == partitioning.count else {
            throw GatewayError.startup("the migration holds \(paths.count) of the \(partitioning.count) registry partitions it took up; the layout was not changed: run it again")
        }
        let landed = try Self.counts(of: paths)
        guard landed == expected else {
            throw GatewayError.startup("the partitions hold \(landed.tokens) tokens (\(landed.active) active) where the shared registry holds \(expected.tokens) (\(expected.active) active); the layout was not changed: run the migration again")
        }
        summary.activeTokens = expected.active
    }

    /// Tokens, and active ones, the registry files at `paths` hold together.
    private static func counts(of paths: [String]) throws -> (tokens: Int, active: Int) {
        var total = (tokens: 0, active: 0)
        for path in paths {
            let file = try SQLiteConnection(path: path)
            defer { file.close() }
            let counts = try file.query("SELECT count(*), coalesce(sum(active), 0) FROM tokens") { (Int($0.int64(at: 0)), Int($0.int64(at: 1))) }
            total.tokens += counts.first?.0 ?? 0
            total.active += counts.first?.1 ?? 0
        }
        return total
    }

    /// Purges the shared log and its snapshots (their streams stay, empty); answers how many
    /// messages went.
    private func purgeSharedLog(_ layout: RegistryLogLayout, jetStream: JetStream, loop: EventLoop) throws -> UInt64 {
        var purged: UInt64 = 0
        for stream in [layout.streamName, layout.snapshotStreamName] {
            guard let state = try Self.state(of: stream, jetStream), state.messages > 0 else { continue }
            let outcome = Mutex<Result<UInt64, NATSError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                do throws(NATSError) {
                    let requests = try NATSRequests(connection: jetStream.messaging, loop: loop)
                    requests.purge(stream: stream, below: state.lastSequence + 1, timeout: .seconds(10)) { result in
                        withExtendedLifetime(requests) { outcome.withLock { $0 = result } }
                        done.signal()
                    }
                } catch {
                    outcome.withLock { $0 = .failure(error) }
                    done.signal()
                }
            }
            done.wait()
            purged += try outcome.withLock { $0! }.get()
        }
        return purged
    }
}
