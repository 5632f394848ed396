import Dispatch
import Foundation
import LoadKit
import Measurements
import NATS
import NATSServers
import Synchronization
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// `registry-partitions`: what the partitioned token registry costs (docs/cluster.md, "The
/// partitioned token registry"; issue 34, item 2), on a three-node cluster, in one run:
///
/// 1. The reference: `sample` registrations committed to one SQLite file with the whole
///    registry's rules: the bytes per token of today's copy on every gateway.
/// 2. `tokens` registrations through one gateway owning every registry partition (each list cut
///    by partition, logged to the partitions' streams by compare-and-set, applied to their files;
///    each registration's user note to the user's partition).
/// 3. The second half of the partitions let go by it and taken up by a new gateway with empty
///    files, as a replaced gateway takes its share: from the newest snapshot of each and the log
///    after it. The time until the last is served, and each gateway's files.
///
/// Registration CPU with two gateway processes needs the partitioned registry wired into the
/// gateway; it is not measured here.
struct RegistryPartitionsScale {
    struct Options {
        var tokens = 10_000_000
        var partitions = 64
        /// Registrations of the one-file reference (its bytes per token do not change with the count).
        var sampleTokens = 1_000_000
    }

    static let name = "registry-partitions"

    let options: Options

    func run() async throws -> ScenarioResult {
        let log = ScenarioLog(Self.name)
        let started = monotonicNanoseconds()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-registry-partitions-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/first", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/second", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var registrations = TokenRegistryScale.Options()
        registrations.tokens = options.tokens
        let helper = TokenRegistryScale(options: registrations)
        let sample = min(options.sampleTokens, options.tokens)

        let wholeFile = try StoreWriter(path: directory + "/whole.sqlite")
        let whole = try helper.register(0..<sample, through: wholeFile)
        wholeFile.close()
        let wholePerToken = Double(helper.fileBytes(directory + "/whole.sqlite")) / Double(sample)
        log.say(String(format: "the whole registry in one file: %.0f bytes per token (%@ tokens committed at %@ tokens/s)", wholePerToken,
                       ReportNumbers.grouped(Double(sample)), ReportNumbers.grouped(whole.rate)))

        let cluster = try await NATSCluster.start(size: 3)
        let before = TokenRegistryScale.ServersReading(cluster)
        let partitioning = TokenPartitioning(ChannelPartitioning(count: options.partitions)!)
        let layout = RegistryLogLayout()
        let first = try Gateway(cluster: cluster, name: "first", directory: directory + "/first", partitioning: partitioning)
        try RegistryPartition.ensureLogs(count: options.partitions, jetStream: first.jetStream, layout: layout, replicas: 3)
        for partition in 0..<options.partitions { try first.registry.takeUp(partition, under: Fence(Revision(1))) }
        let registered = try helper.inLists(0..<options.tokens, failing: "registering through the partitions") { list, done in
            first.registry.log(list) { result in done(result.failure.map { "\($0)" }) }
        }
        log.say(String(format: "%@ tokens registered through one gateway owning the %d partitions in %.1f s (%@ tokens/s)",
                       ReportNumbers.grouped(Double(options.tokens)), options.partitions, registered.seconds,
                       ReportNumbers.grouped(registered.rate)))
        try await Task.sleep(for: .seconds(5))
        let after = TokenRegistryScale.ServersReading(cluster)
        var streamBytes: UInt64 = 0
        for partition in 0..<options.partitions {
            streamBytes += try first.jetStream.streamState(layout.partitionStreamName(partition))?.bytes ?? 0
        }

        // A replaced gateway takes its share: the second half, from empty files.
        let half = options.partitions / 2
        let second = try Gateway(cluster: cluster, name: "second", directory: directory + "/second", partitioning: partitioning)
        let takeoverStart = monotonicNanoseconds()
        var slowest = 0.0
        for partition in half..<options.partitions {
            first.registry.letGo(partition)
            let start = monotonicNanoseconds()
            try second.registry.takeUp(partition, under: Fence(Revision(2)))
            slowest = max(slowest, Double(monotonicNanoseconds() - start) / 1e9)
        }
        let takeoverSeconds = Double(monotonicNanoseconds() - takeoverStart) / 1e9
        let read = second.registry.takeoverFigures
        log.say(String(format: "the second half taken up by a new gateway in %.1f s (the slowest partition %.1f s): snapshots of %@ in %.1f s, "
                       + "then %@ entries of the log (%@ operations, %@) in %.1f s", takeoverSeconds, slowest, helper.megabytes(read.snapshotBytes),
                       read.snapshotSeconds, ReportNumbers.grouped(Double(read.tailEntries)), ReportNumbers.grouped(Double(read.tailOperations)),
                       helper.megabytes(read.tailBytes), read.tailSeconds))
        // Each gateway's files once closed (their write-ahead logs copied back), as a gateway's
        // disk holds them at rest; open, each also has a log of up to 4 MiB.
        second.close()
        first.close()
        let firstBytes = (0..<half).map { helper.fileBytes(RegistryPartition.path(of: $0, in: directory + "/first")) }.reduce(0, +)
        let secondBytes = (half..<options.partitions).map { helper.fileBytes(RegistryPartition.path(of: $0, in: directory + "/second")) }.reduce(0, +)
        let wholeBytes = wholePerToken * Double(options.tokens)
        let share = Double(max(firstBytes, secondBytes)) / wholeBytes
        log.say(String(format: "files per gateway: %@ and %@ against %@ for the whole copy (%.2f)", helper.megabytes(firstBytes),
                       helper.megabytes(secondBytes), helper.megabytes(Int(wholeBytes)), share))
        await cluster.stop()

        let tokens = Double(options.tokens)
        let memoryGrowth = zip(after.memory, before.memory).map { $0 - $1 }.max() ?? 0
        let diskGrowth = zip(after.disk, before.disk).map { $0 - $1 }.max() ?? 0
        return ScenarioResult(
            name: Self.name,
            description: "the partitioned token registry at \(ReportNumbers.grouped(tokens)) tokens in \(options.partitions) partitions: "
                + "registrations through one gateway owning them, a new gateway taking half of them up, each gateway's files against the whole copy",
            parameters: [.init(name: "tokens", value: String(options.tokens)), .init(name: "partitions", value: String(options.partitions)),
                         .init(name: "sample tokens", value: String(sample))],
            durationSeconds: Double(monotonicNanoseconds() - started) / 1e9,
            throughputs: [.init(name: "registrations through the partitions (one gateway)", unit: "tokens/s", value: registered.rate,
                                ceilingRatio: registered.rate / whole.rate),
                          .init(name: "registrations to one SQLite file (the whole registry)", unit: "tokens/s", value: whole.rate, ceilingRatio: 1)],
            tables: [.init(title: "Each gateway and the servers at \(ReportNumbers.grouped(tokens)) tokens",
                           columns: ["first gateway's files", "second gateway's files", "the whole copy (per gateway today)", "largest share",
                                     "half taken up by a new gateway", "slowest partition", "registry streams", "servers' memory growth B/token",
                                     "servers' disk growth B/token"],
                           rows: [[helper.megabytes(firstBytes), helper.megabytes(secondBytes), helper.megabytes(Int(wholeBytes)),
                                   String(format: "%.2f", share), String(format: "%.1f s", takeoverSeconds), String(format: "%.1f s", slowest),
                                   helper.megabytes(Int(streamBytes)), String(format: "%.0f", Double(memoryGrowth) / tokens),
                                   String(format: "%.0f", Double(diskGrowth) / tokens)]])],
            checks: [.init(name: "files per gateway / the whole copy (2 gateways)", measured: share, target: 0.6, comparison: .atMost),
                     .init(name: "a replaced gateway serving its half (s)", measured: takeoverSeconds, target: 60, comparison: .atMost)],
            notes: ["Registrations as token-registry's: each token follows one of 20 teams and one of 5 leagues and belongs to a user of its own, so "
                    + "each also notes its user in the user's partition.",
                    "The partitions are taken up one after another by one thread, as the gateway's lease keeper grants them in turn."])
    }

    /// One gateway's part of the registry: its loop, its connection and its partitions' files.
    final class Gateway: Sendable {
        let loop: EventLoop
        let connection: NATSConnection
        let jetStream: JetStream
        let registry: PartitionedRegistry

        init(cluster: NATSCluster, name: String, directory: String, partitioning: TokenPartitioning) throws {
            loop = EventLoop.start(name: "registry-\(name)")
            connection = try NATSConnection.connect(NATSSettings(servers: cluster.urls, name: "registry-\(name)"), loop: loop, events: { _ in })
            jetStream = try JetStream(connection)
            registry = PartitionedRegistry(jetStream: jetStream, connection: connection, layout: RegistryLogLayout(), partitioning: partitioning,
                                           directory: directory, fences: nil, loop: loop)
        }

        func close() {
            registry.close()
            connection.close()
            loop.stopAndWait()
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
