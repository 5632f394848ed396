import TouchlineConfiguration
import TouchlineJetStream

extension ClusterStorageLimits {
    /// The channel store's part of the limits.
    var channelLogs: ChannelLogLayout.SizeLimits {
        ChannelLogLayout.SizeLimits(partitionLogBytes: partitionLogBytes, globalLogBytes: globalLogBytes, recordingsBytes: recordingsBytes)
    }
}

extension ClusterStorageLimits {
    /// Every limited stream and bucket of a cluster, by name, with its limit: what the storage
    /// gauge reads.
    func streams(layout: ChannelLogLayout, ingest: DirectIngest, registry: JetStreamSettings.RegistryLayout) -> [(name: String, limitBytes: Int)] {
        let registryLayout = RegistryLogLayout(prefix: layout.prefix)
        let partitions = layout.partitioning.count
        let registryStreams: [(name: String, limitBytes: Int)] = switch registry {
        case .shared: [(registryLayout.streamName, registryBytes), (registryLayout.snapshotStreamName, registrySnapshotBytes)]
        case .partitioned:
            (0..<partitions).map { (registryLayout.partitionStreamName($0), registryPartitionBytes(partitions: partitions)) }
        }
        return layout.logs.map { log in (layout.streamName(of: log), channelLogs.bytes(of: log)!) } + [(layout.recordingsStreamName, recordingsBytes)] + registryStreams + [(ingest.ingestStream, ingestBytes), (ingest.rejectedStream, rejectedBytes),
             ("KV_" + SharedJobBoard.bucketName(prefix: layout.prefix), jobsBytes), ("KV_" + PartitionLeaseKeeper.bucketName(prefix: layout.prefix), leasesBytes)]
    }
}
