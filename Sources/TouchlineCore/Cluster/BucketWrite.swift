/// A conditional write of one key that ``PartitionLeases`` asks the shell to perform.
///
/// Every change is a compare-and-set, which is what makes ownership safe: a create fails if the
/// key exists, an update or a delete fails unless the key's revision is still `expected`. Two
/// instances racing for a partition therefore cannot both succeed, and a takeover cannot
/// overwrite a renewal its author had not seen yet.
public struct BucketWrite: Hashable, Sendable, CustomStringConvertible {
    /// Tells one write of an instance's run from every other (it counts up from 1).
    public struct ID: Hashable, Comparable, Sendable {
        public let sequence: UInt64
        public init(sequence: UInt64) { self.sequence = sequence }
        public static func < (a: ID, b: ID) -> Bool { a.sequence < b.sequence }
    }

    public enum Change: Hashable, Sendable {
        /// Create the key with this value (`record.encoded`); fails if it exists. A key whose
        /// last write is a delete counts as absent.
        case create(LeaseRecord)
        /// Replace the value if the key's revision is `expected`.
        case update(LeaseRecord, expected: Revision)
        /// Delete the key if its revision is `expected`.
        case delete(expected: Revision)
    }

    public let id: ID
    public let key: LeaseKey
    public let change: Change

    public init(id: ID, key: LeaseKey, change: Change) {
        self.id = id
        self.key = key
        self.change = change
    }

    /// The record the write stores, nil for a delete.
    public var record: LeaseRecord? {
        switch change {
        case .create(let record), .update(let record, _): record
        case .delete: nil
        }
    }

    public var description: String {
        switch change {
        case .create(let record): "#\(id.sequence) create \(key) = \(record)"
        case .update(let record, let expected): "#\(id.sequence) update \(key) @\(expected) = \(record)"
        case .delete(let expected): "#\(id.sequence) delete \(key) @\(expected)"
        }
    }
}

/// What became of a ``BucketWrite``.
public enum WriteOutcome: Hashable, Sendable {
    /// The bucket applied it and gave the key this revision (for a delete, the delete marker's).
    case stored(Revision)
    /// The condition did not hold (the key exists, or its revision moved on): nothing changed.
    case conflict
    /// No answer (a timeout, a lost connection): the write may or may not have been applied.
    case failed
}
