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

    /// Where the health probe writes (the last write of each store kept, for a minute).
    public var probeStreamName: String { "\(prefix.uppercased())_LOG_PROBE" }
    public func probeSubject(writer: String) -> String { "\(prefix).probe.\(writer)" }
    public var probeSubjects: [String] { ["\(prefix).probe.>"] }

    /// The log of `batch`: its channels' partition. A batch for channels of two partitions is
    /// refused (it could not commit all-or-nothing; the gateway writes one channel per batch).
    public func log(of batch: WriteBatch) throws(StoreError) -> Log {
        let partitions = Set(batch.operations.flatMap(Self.channels(of:)).map(partitioning.partition(of:)))
        guard partitions.count <= 1 else {
            throw .refused("a batch for channels of partitions \(partitions.sorted()) cannot commit as one")
        }
        return partitions.first.map(Log.partition) ?? .global
    }

    private static func channels(of operation: StoreOperation) -> [String] {
        switch operation {
        case .createChannel(let record): [record.id]
        case .channelCreated(let id, _, _), .markStatus(let id, _, _, _), .deleteChannel(let id), .truncateEvents(let id, _): [id]
        case .updateState(let update): [update.channelID]
        case .appendEvents(let events): events.map(\.channelID)
        case .webhook: []
        }
    }
}
