/// What a registry partition's takeover read, and how long each part of it took: its newest
/// snapshot (fetched and restored) and the log's tail after it (fetched and applied). A takeover's
/// time goes to one or the other, and how often snapshots are written moves it between them
/// (docs/benchmarks.md, "A registry partition's takeover").
public struct RegistryTakeoverFigures: Sendable, Equatable {
    /// The snapshot restored: its bytes (0: none was needed), and the seconds to fetch and restore it.
    public var snapshotBytes = 0
    public var snapshotSeconds = 0.0
    /// The entries after it applied, their operations, their bytes, and the seconds to fetch and apply them.
    public var tailEntries = 0
    public var tailOperations = 0
    public var tailBytes = 0
    public var tailSeconds = 0.0

    public init() {}

    /// Both added, as a gateway's takeovers of several partitions.
    public static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        sum.snapshotBytes += rhs.snapshotBytes
        sum.snapshotSeconds += rhs.snapshotSeconds
        sum.tailEntries += rhs.tailEntries
        sum.tailOperations += rhs.tailOperations
        sum.tailBytes += rhs.tailBytes
        sum.tailSeconds += rhs.tailSeconds
        return sum
    }
}
