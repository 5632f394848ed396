/// One share of a personal job's audience, run by whichever gateway of a cluster owns the
/// slice's partition.
///
/// A job that walks the registry (`follows`, a token list) is cut into slices by the token's
/// first hex digits: 16 slices, one per first digit, or as many as the cluster's partitions,
/// on the bounds of the partitioned registry's partitions (``TokenPartitioning``). Device tokens
/// are uniformly random, so the slices are even, and a slice is a contiguous run of the
/// audience's token order, so each runs as an ordinary ``FanOutJob`` started at
/// ``startCursor`` and stopped at ``upperBound``. No audience is read to cut it: a slice is
/// known before any of its tokens is. A job of one token or one user's tokens is one slice.
///
/// Where a slice runs: cut in 16, a job's slices spread over consecutive partitions from the
/// job's own (the partitioning's hash of its id), so the slices of one job land on different
/// owners and different jobs start on different partitions (``partition(ofJob:in:)``). Cut on
/// the registry's partitions, slice i runs on partition i, whose owner holds its tokens
/// (``registryPartition``).
public struct AudienceSlice: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The slice's position, 0 to `count - 1`.
    public let index: Int
    /// Slices of the job: 1, ``hexDigitCount``, or a cluster's partition count (up to 1,024).
    public let count: Int

    /// Slices of a job that walks the whole registry: one per first hex digit.
    public static let hexDigitCount = 16

    /// `count` from 1 to 1,024, `index` within it.
    public init?(index: Int, count: Int) {
        guard ChannelPartitioning(count: count) != nil, (0..<count).contains(index) else { return nil }
        self.index = index
        self.count = count
    }

    /// Every slice of a job cut in `count`.
    public static func all(count: Int) -> [AudienceSlice] {
        (0..<count).compactMap { AudienceSlice(index: $0, count: count) }
    }

    /// The slices' bounds: those of a partitioned registry of `count` partitions.
    private var bounds: TokenPartitioning { TokenPartitioning(ChannelPartitioning(count: count)!) }

    /// The cursor the slice's walk starts after (nil: from the first token). Tokens are
    /// lowercase hex of an even length, so every token of the slice sorts after its first
    /// four-digit prefix written alone, and every token of an earlier slice before it (cut in
    /// 16: `1000` for the tokens starting with `1`).
    public var startCursor: String? { bounds.startCursor(of: index) }

    /// Tokens of the slice sort before this (nil: the last slice, no bound).
    public var upperBound: String? { bounds.upperBound(of: index) }

    /// The partition of a partitioned registry of `count` partitions that holds this slice's
    /// tokens, and so the one whose owner runs it.
    public var registryPartition: Int { index }

    /// Whether `token` (lowercase hex) belongs to this slice.
    public func contains(_ token: String) -> Bool {
        if let start = startCursor, token <= start { return false }
        if let bound = upperBound, token >= bound { return false }
        return true
    }

    /// The partition whose owner runs the slice of job `jobID`.
    public func partition(ofJob jobID: String, in partitioning: ChannelPartitioning) -> Int {
        (partitioning.partition(of: jobID) + index) % partitioning.count
    }

    public var description: String { "slice \(index + 1)/\(count)" }
}
