/// The revision the key-value bucket gave a write of one key (a create, an update or a delete).
///
/// Revisions of one key only grow, so a report about a key can be judged by its revision alone:
/// an older or equal one than already known is out of date and changes nothing.
public struct Revision: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let value: UInt64

    public init(_ value: UInt64) { self.value = value }

    public static func < (a: Revision, b: Revision) -> Bool { a.value < b.value }

    public var description: String { String(value) }
}

/// The revision of the lease write that granted a partition to its current owner.
///
/// Every later grant of the same partition (to anyone) has a higher fence, because it is a later
/// write of the same key. Whatever the owner writes downstream can carry its fence, so a store
/// that has seen a higher one can refuse a late write of an owner that lost the partition.
public struct Fence: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let revision: Revision

    public init(_ revision: Revision) { self.revision = revision }

    public static func < (a: Fence, b: Fence) -> Bool { a.revision < b.revision }

    public var description: String { "fence \(revision)" }
}
