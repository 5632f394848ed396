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
    func streams(layout: ChannelLogLayout, ingest: DirectIngest) -> [(name: String, limitBytes: Int)] {
        layout.logs.map { log in (layout.streamName(of: log), channelLogs.bytes(of: log)!) } + [(layout.recordingsStreamName, recordingsBytes), (RegistryLogLayout(prefix: layout.prefix).streamName, registryBytes),
             (RegistryLogLayout(prefix: layout.prefix).snapshotStreamName, registrySnapshotBytes),
             (ingest.ingestStream, ingestBytes), (ingest.rejectedStream, rejectedBytes),
             ("KV_" + SharedJobBoard.bucketName(prefix: layout.prefix), jobsBytes), ("KV_" + PartitionLeaseKeeper.bucketName(prefix: layout.prefix), leasesBytes)]
    }
}
