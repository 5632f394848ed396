import TouchlineCore
import TouchlineStore

/// Where the JetStream backend logs channel batches: one stream per partition (so a
/// partition's batches are ordered, and its owner writes them by compare-and-set on the
/// stream's last sequence, the condition that holds on a replicated stream: docs/cluster.md),
/// one for batches that concern no channel (webhook delivery outcomes, outbox pruning), and a
/// small one the store's health probe writes to.
public struct ChannelLogLayout: Sendable, Equatable {
    /// Names of streams and subjects start with it, so deployments can share a cluster.
    public let prefix: String
    public let partitioning: ChannelPartitioning

    public init(prefix: String = "touchline", partitioning: ChannelPartitioning) {
        self.prefix = prefix
        self.partitioning = partitioning
    }

    /// Which log a batch is written to.
    public enum Log: Hashable, Sendable, CustomStringConvertible {
        case partition(Int)
        /// Batches without a channel.
        case global

        public var description: String {
            switch self {
            case .partition(let partition): "partition \(partition)"
            case .global: "the global log"
            }
        }
    }

    /// How large each of the store's streams may grow on a server (nil: unlimited). A full log
    /// refuses writes: its partition answers 503 while the others carry on.
    public struct SizeLimits: Sendable, Equatable {
        public var partitionLogBytes: Int?
        public var globalLogBytes: Int?
        public var recordingsBytes: Int?

        public init(partitionLogBytes: Int? = nil, globalLogBytes: Int? = nil, recordingsBytes: Int? = nil) {
            self.partitionLogBytes = partitionLogBytes
            self.globalLogBytes = globalLogBytes
            self.recordingsBytes = recordingsBytes
        }

        public func bytes(of log: Log) -> Int? {
            switch log {
            case .partition: partitionLogBytes
            case .global: globalLogBytes
            }
        }
    }

    /// The health probe's stream keeps one small message per store for a minute.
    static let probeStreamBytes = 8 << 20

    /// Every log: the partitions', then the global one.
    public var logs: [Log] { (0..<partitioning.count).map(Log.partition) + [.global] }

    public func streamName(of log: Log) -> String {
        switch log {
        case .partition(let partition): "\(prefix.uppercased())_LOG_\(partition)"
        case .global: "\(prefix.uppercased())_LOG_GLOBAL"
        }
    }

    /// The only subject of the log's stream.
    public func subject(of log: Log) -> String {
        switch log {
        case .partition(let partition): "\(prefix).log.\(partition)"
        case .global: "\(prefix).log.global"
        }
    }

    /// The header that marks a partition log's message as a snapshot of the partition's channels
    /// (``ChannelTables/binaryEncoded``) rather than a batch: replay replaces the partition's
    /// channels with it, and the messages before it may be trimmed (docs/cluster.md, "Snapshots").
    public static let snapshotHeader = "Touchline-Snapshot"

    /// The header that marks a partition log's message as a takeover record: the fence a new
    /// owner took the partition over with (its lease revision), written after it read the log and
    /// before it serves. Replay skips it; its place in the log is what fences earlier owners out
    /// (docs/cluster.md, "What each fence protects").
    public static let takeoverHeader = "Touchline-Takeover"

    /// Where the health probe writes (the last write of each store kept, for a minute).
    public var probeStreamName: String { "\(prefix.uppercased())_LOG_PROBE" }
    public func probeSubject(writer: String) -> String { "\(prefix).probe.\(writer)" }
    public var probeSubjects: [String] { ["\(prefix).probe.>"] }

    // MARK: Recordings

    /// The stream of recorded feeds (``StoreOperation/recordEvents(_:)``): one subject per
    /// channel, beside the partition logs, never trimmed by their snapshots.
    public var recordingsStreamName: String { "\(prefix.uppercased())_RECORDINGS" }
    public var recordingsSubjects: [String] { ["\(prefix).recording.>"] }

    /// Where a channel's recorded events go (a subject token holds no `.`: it is written `~`,
    /// which channel ids never hold).
    public func recordingSubject(of channelID: String) -> String {
        "\(prefix).recording.\(channelID.replacingOccurrences(of: ".", with: "~"))"
    }

    /// The log of `batch`: its channels' partition, or the partition of the outbox rows whose
    /// delivery outcomes it writes. A batch for two partitions is refused (it could not commit
    /// all-or-nothing; the gateway writes one channel per batch, and splits outcomes by partition).
    public func log(of batch: WriteBatch) throws(StoreError) -> Log {
        var logs: Set<Log> = []
        // A batch's events are mostly one channel's: each run of one id is placed once.
        var previous: String?
        func place(_ channelID: String) {
            guard channelID != previous else { return }
            previous = channelID
            logs.insert(.partition(partitioning.partition(of: channelID)))
        }
        for operation in batch.operations {
            switch operation {
            case .createChannel(let record): place(record.id)
            case .channelCreated(let id, _, _), .markStatus(let id, _, _, _), .deleteChannel(let id), .truncateEvents(let id, _): place(id)
            case .updateState(let update): place(update.channelID)
            case .appendEvents(let events), .recordEvents(let events): for event in events { place(event.channelID) }
            case .webhook(.updateDeliveries(let updates)): for update in updates { logs.insert(log(ofOutboxID: update.outboxID)) }
            case .webhook: break
            }
        }
        guard logs.count <= 1 else {
            let partitions = logs.map { if case .partition(let partition) = $0 { "\(partition)" } else { "global" } }.sorted()
            throw .refused("a batch for partitions \(partitions) cannot commit as one")
        }
        return logs.first ?? .global
    }

    // MARK: Outbox ids

    /// The most webhook events one batch may record (the outbox id's bits for their index).
    public static let recordsPerBatch = 1 << 12

    /// The id of the `index`th webhook event recorded by the batch at `sequence` of `log`: the
    /// log sequence, then the index, then the log (11 bits: partitions 0 to 1,023, the global log
    /// 1,024). Every gateway that reads the log numbers the event alike; ids grow with the log,
    /// so one partition's events page in commit order, and a delivery outcome goes to the log
    /// that recorded its event (``log(ofOutboxID:)``).
    public func outboxID(of log: Log, sequence: UInt64, index: Int) -> Int64 {
        Int64(sequence) << 23 | Int64(index) << 11 | Int64(Self.slot(of: log))
    }

    /// The log that recorded outbox row `id` (``outboxID(of:sequence:index:)``).
    public func log(ofOutboxID id: Int64) -> Log {
        let slot = Int(id & 0x7FF)
        return slot < partitioning.count ? .partition(slot) : .global
    }

    private static func slot(of log: Log) -> Int {
        switch log {
        case .partition(let partition): partition
        case .global: 1_024
        }
    }
}
