/// Where the JetStream backend logs the shared token registry: one stream with one subject,
/// every registration, deactivation and deletion of every gateway in one order
/// (docs/cluster.md, "The shared token registry").
public struct RegistryLogLayout: Sendable, Equatable {
    /// Names of the stream and subject start with it, like the channel logs'.
    public let prefix: String

    public init(prefix: String = "touchline") { self.prefix = prefix }

    public var streamName: String { "\(prefix.uppercased())_TOKENS" }
    public var subject: String { "\(prefix).tokens" }

    /// The stream of snapshots of the registry (``SharedTokenRegistry/compact(_:fence:)``): the
    /// newest one's parts, then its marker.
    public var snapshotStreamName: String { "\(prefix.uppercased())_TOKENS_SNAPSHOTS" }
    public var snapshotPartSubject: String { "\(prefix).tokens.snapshot.part" }
    public var snapshotMarkerSubject: String { "\(prefix).tokens.snapshot.marker" }
    var snapshotSubjects: [String] { ["\(prefix).tokens.snapshot.*"] }

    /// A partitioned registry's log of partition `partition`: a stream of its own, so its owner's
    /// compare-and-set on the stream's last sequence covers exactly that partition, as a channel
    /// partition's log (docs/cluster.md, "The partitioned token registry").
    public func partitionStreamName(_ partition: Int) -> String { "\(prefix.uppercased())_TOKENS_\(partition)" }
    /// The subject of partition `partition`'s entries.
    public func partitionEntrySubject(_ partition: Int) -> String { "\(prefix).tokens.\(partition).entry" }
    /// The subjects of partition `partition`'s snapshots, in its own stream: the parts, then a
    /// marker naming them (``RegistryPartition``).
    public func partitionSnapshotPartSubject(_ partition: Int) -> String { "\(prefix).tokens.\(partition).part" }
    public func partitionSnapshotMarkerSubject(_ partition: Int) -> String { "\(prefix).tokens.\(partition).marker" }
    /// Where a gateway hands a list's part for partition `partition` to its owner (request-reply;
    /// outside the partition's stream, which would store it).
    public func partitionRequestSubject(_ partition: Int) -> String { "\(prefix).registry.\(partition)" }
    /// Every subject of partition `partition`'s stream.
    public func partitionSubjects(_ partition: Int) -> [String] { ["\(prefix).tokens.\(partition).*"] }

    /// A snapshot part's place, `<k>/<n>` (``SnapshotParts``).
    public static let snapshotHeader = "Touchline-Snapshot"

    /// The header that marks a registry partition's message as a takeover record: the fence its
    /// new owner took it over under (``RegistryPartition``). It changes no token.
    public static let takeoverHeader = "Touchline-Takeover"

    /// The header naming the store that logged an entry: it waits for its own entries to be
    /// applied to its copy before it answers.
    public static let writerHeader = "Touchline-Writer"
}
