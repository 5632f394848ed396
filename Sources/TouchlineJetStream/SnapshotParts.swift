/// A partition snapshot as messages of its log: one message when it fits in the servers'
/// `max_payload`, else consecutive parts, each marked `Touchline-Snapshot: <k>/<n>`
/// (docs/cluster.md, "Snapshots"). So every partition's log gets snapshots and trims, however
/// large its state.
///
/// The owner writes the parts one after another by compare-and-set on the log's last sequence,
/// under its takeover's fence, and trims the log below the first part only once the last is
/// stored. A snapshot whose writing stopped (its owner deposed, or a part unanswered) leaves
/// parts that replay ignores: the batches before them, never trimmed, hold the same state.
public enum SnapshotParts {
    /// `bytes` cut into parts of at most `partBytes` (one part when it fits).
    public static func cut(_ bytes: [UInt8], partBytes: Int) -> [[UInt8]] {
        precondition(partBytes > 0, "a part holds at least a byte")
        guard bytes.count > partBytes else { return [bytes] }
        return stride(from: 0, to: bytes.count, by: partBytes).map { Array(bytes[$0..<min($0 + partBytes, bytes.count)]) }
    }

    /// The snapshot header's value for part `index` (from 1) of `count`.
    public static func header(index: Int, count: Int) -> String { "\(index)/\(count)" }

    /// Part and count from a header's value; `1` is a whole snapshot, as logs written before
    /// parts hold them.
    public static func parse(_ header: String) -> (index: Int, count: Int)? {
        if header == "1" { return (1, 1) }
        let fields = header.split(separator: "/", omittingEmptySubsequences: false)
        guard fields.count == 2, let index = Int(fields[0]), let count = Int(fields[1]), count >= 1, (1...count).contains(index) else { return nil }
        return (index, count)
    }

    /// A snapshot being read back, part by part, from consecutive log sequences.
    public struct Reading: Sendable, Equatable {
        public let count: Int
        public private(set) var bytes: [UInt8]
        public private(set) var nextIndex = 2
        public private(set) var nextSequence: UInt64

        /// Starts with part 1, read at `sequence`.
        public init(count: Int, firstPart: [UInt8], at sequence: UInt64) {
            self.count = count
            bytes = firstPart
            nextSequence = sequence + 1
        }

        public var isComplete: Bool { nextIndex > count }

        /// Adds part `index` read at `sequence`; false (nothing added) unless it is the next part
        /// at the next sequence.
        public mutating func add(_ part: [UInt8], index: Int, at sequence: UInt64) -> Bool {
            guard index == nextIndex, sequence == nextSequence, !isComplete else { return false }
            bytes += part
            nextIndex += 1
            nextSequence += 1
            return true
        }
    }
}
