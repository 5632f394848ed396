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
        (0..<count(of: bytes.count, partBytes: partBytes)).map { part($0, of: bytes, partBytes: partBytes) }
    }

    /// How many parts ``cut(_:partBytes:)`` makes of `byteCount` bytes.
    public static func count(of byteCount: Int, partBytes: Int) -> Int {
        precondition(partBytes > 0, "a part holds at least a byte")
        return max(1, (byteCount + partBytes - 1) / partBytes)
    }

    /// Where part `index` (from 0) of ``cut(_:partBytes:)`` lies in `byteCount` bytes: a large
    /// snapshot is logged a part at a time, each read or copied out as it goes.
    public static func range(of index: Int, in byteCount: Int, partBytes: Int) -> Range<Int> {
        index * partBytes..<min((index + 1) * partBytes, byteCount)
    }

    private static func part(_ index: Int, of bytes: [UInt8], partBytes: Int) -> [UInt8] {
        Array(bytes[range(of: index, in: bytes.count, partBytes: partBytes)])
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

    /// The order a snapshot's parts are read back in: part 1 at the sequence it starts at, each
    /// next part at the next sequence.
    public struct Order: Sendable, Equatable {
        public let count: Int
        public private(set) var nextIndex = 2
        public private(set) var nextSequence: UInt64

        /// Starts with part 1 of `count`, read at `sequence`.
        public init(count: Int, firstPartAt sequence: UInt64) {
            self.count = count
            nextSequence = sequence + 1
        }

        public var isComplete: Bool { nextIndex > count }

        /// Takes part `index` read at `sequence`; false (nothing taken) unless it is the next part
        /// at the next sequence.
        public mutating func take(index: Int, at sequence: UInt64) -> Bool {
            guard index == nextIndex, sequence == nextSequence, !isComplete else { return false }
            nextIndex += 1
            nextSequence += 1
            return true
        }
    }

    /// A snapshot being read back into memory, part by part, from consecutive log sequences.
    public struct Reading: Sendable, Equatable {
        public private(set) var order: Order
        public private(set) var bytes: [UInt8]

        /// Starts with part 1, read at `sequence`.
        public init(count: Int, firstPart: [UInt8], at sequence: UInt64) {
            order = Order(count: count, firstPartAt: sequence)
            bytes = firstPart
        }

        public var isComplete: Bool { order.isComplete }

        /// Adds part `index` read at `sequence`; false (nothing added) unless it is the next part
        /// at the next sequence.
        public mutating func add(_ part: [UInt8], index: Int, at sequence: UInt64) -> Bool {
            guard order.take(index: index, at: sequence) else { return false }
            bytes += part
            return true
        }
    }
}
