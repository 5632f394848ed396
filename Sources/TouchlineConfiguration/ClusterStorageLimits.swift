import TouchlineCore

/// The size limit of every stream and bucket the gateways keep on a cluster (`store.limits`,
/// one JSON object; docs/scale-out.md, "Sizing the cluster"). Each is what one server holds of
/// that stream; a replicated stream weighs it on each of its replicas.
///
/// Every limit refuses writes past it (the rejected-events stream drops its oldest instead),
/// so one stream filling up answers 503 for what it holds and leaves the rest of the cluster
/// writable: the servers' own `max_file_store` is one budget for all of them, and a cluster
/// that reached it would refuse every partition's writes at once. Gateways report how full each
/// stream is (`touchline_cluster_stream_bytes` against `touchline_cluster_stream_limit_bytes`)
/// and the alerts fire at 80 % and 95 %.
public struct ClusterStorageLimits: Sendable, Equatable {
    /// Each partition log: its snapshot, twice during a snapshot's write, plus the batches since
    /// (`snapshotLogBytes` or the snapshot's size, whichever is more).
    public var partitionLogBytes = 64 << 20
    /// The log of batches that concern no channel (a few webhook outcomes).
    public var globalLogBytes = 256 << 20
    /// Recorded feeds; holds `recordings.maxRecordedBytes` of event bodies with their subjects and headers.
    public var recordingsBytes = 10 << 30
    /// The token registry's log (about 120 bytes per registration).
    public var registryBytes = 4 << 30
    /// The token registry's snapshots: the newest, and the next while it is written (about 90
    /// bytes per token each).
    public var registrySnapshotBytes = 4 << 30
    /// Events published straight to the cluster and not yet taken by their owner.
    public var ingestBytes = 1 << 30
    /// Directly published events that were refused (kept 7 days; the oldest go first when full).
    public var rejectedBytes = 256 << 20
    /// The personal jobs' bucket: each job, its slices' checkpoints, until it expires.
    public var jobsBytes = 256 << 20
    /// The lease bucket: one small entry per partition and per gateway.
    public var leasesBytes = 16 << 20

    public init() {}

    /// Every member, as the file names it: the one list the JSON, the report and the sum read.
    private static let members: [(name: String, keyPath: WritableKeyPath<ClusterStorageLimits, Int> & Sendable)] = [
        ("partitionLogBytes", \.partitionLogBytes), ("globalLogBytes", \.globalLogBytes), ("recordingsBytes", \.recordingsBytes),
        ("registryBytes", \.registryBytes), ("registrySnapshotBytes", \.registrySnapshotBytes), ("ingestBytes", \.ingestBytes), ("rejectedBytes", \.rejectedBytes),
        ("jobsBytes", \.jobsBytes), ("leasesBytes", \.leasesBytes),
    ]

    /// Limits from JSON; every member is optional, from 1 MiB to 1 TiB.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        let members = try ConfigurationMembers.members(of: value, allowed: Self.members.map(\.name), path: "limits")
        for member in Self.members {
            if let limit = try ConfigurationMembers.integer(members, "limits.\(member.name)", (1 << 20)...(1 << 40), key: member.name) {
                self[keyPath: member.keyPath] = limit
            }
        }
    }

    /// As `--check-config` shows them.
    var summary: String {
        Self.members.map { "\($0.name) \(self[keyPath: $0.keyPath])" }.joined(separator: ", ")
    }

    /// Each partition's stream of a partitioned token registry (`store.registry`): its share of
    /// the registry's log and snapshot limits together, which it holds both of, and at least
    /// 64 MiB.
    public func registryPartitionBytes(partitions: Int) -> Int {
        max(64 << 20, (registryBytes + registrySnapshotBytes) / max(1, partitions))
    }

    /// What one server holds at most, all partitions' logs together, for `max_file_store`.
    public func total(partitions: Int) -> Int {
        Self.members.reduce((partitions - 1) * partitionLogBytes) { $0 + self[keyPath: $1.keyPath] }
    }
}
