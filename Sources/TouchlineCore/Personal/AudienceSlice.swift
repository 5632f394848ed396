/// One share of a personal job's audience, run by whichever gateway of a cluster owns the
/// slice's partition.
///
/// A job that walks the registry (`follows`, a token list) is cut by the first hex digit of the
/// token into 16 slices: device tokens are uniformly random, so the slices are even, and a slice
/// is a contiguous run of the audience's token order, so each runs as an ordinary
/// ``FanOutJob`` started at ``startCursor`` and stopped at ``upperBound``. No audience is read
/// to cut it: a slice is known before any of its tokens is. A job of one token or one user's
/// tokens is one slice.
///
/// The slice's partition spreads a job's slices over consecutive partitions from the job's own
/// (the partitioning's hash of its id), so the slices of one job land on different owners and
/// different jobs start on different partitions.
public struct AudienceSlice: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The slice's position, 0 to `count - 1`.
    public let index: Int
    /// Slices of the job: 1 or ``hexDigitCount``.
    public let count: Int

    /// Slices of a job that walks the registry: one per first hex digit.
    public static let hexDigitCount = 16
    private static let digits = Array("0123456789abcdef")

    /// `count` is 1 or 16, `index` within it.
    public init?(index: Int, count: Int) {
        guard count == 1 || count == Self.hexDigitCount, (0..<count).contains(index) else { return nil }
        self.index = index
        self.count = count
    }

    /// Every slice of a job cut in `count`.
    public static func all(count: Int) -> [AudienceSlice] {
        (0..<count).compactMap { AudienceSlice(index: $0, count: count) }
    }

    /// The cursor the slice's walk starts after (nil: from the first token). Tokens are
    /// lowercase hex of an even length, so every token starting with this slice's digit sorts
    /// after the digit alone, and every token of an earlier slice before it.
    public var startCursor: String? {
        count == 1 || index == 0 ? nil : String(Self.digits[index])
    }

    /// Tokens of the slice sort before this (nil: the last slice, no bound).
    public var upperBound: String? {
        count == 1 || index == count - 1 ? nil : String(Self.digits[index + 1])
    }

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
