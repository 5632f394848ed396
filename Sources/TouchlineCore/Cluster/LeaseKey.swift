/// A key of the lease bucket: one lease per partition, one heartbeat per member.
///
/// ``name`` is the key as stored; every instance of a cluster must use the same names, so they
/// are fixed here rather than in the shell.
public enum LeaseKey: Hashable, Sendable, CustomStringConvertible {
    /// The lease of partition `n`, in `0..<partitionCount`: its value names the owner.
    case partition(Int)
    /// The heartbeat of a member: alive while it gets new revisions.
    case member(InstanceID)

    private static let partitionPrefix = "partition."
    private static let memberPrefix = "member."

    /// The key in the bucket: `partition.<n>` (decimal) or `member.<instance>`.
    public var name: String {
        switch self {
        case .partition(let number): Self.partitionPrefix + String(number)
        case .member(let instance): Self.memberPrefix + instance.name
        }
    }

    /// The key a bucket name stands for; nil for a name this protocol never writes (the shell
    /// ignores those keys).
    public init?(name: String) {
        if let digits = name.dropping(prefix: Self.partitionPrefix) {
            guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  digits == "0" || !digits.hasPrefix("0"), let number = Int(digits) else { return nil }
            self = .partition(number)
        } else if let instance = name.dropping(prefix: Self.memberPrefix).flatMap(InstanceID.init) {
            self = .member(instance)
        } else {
            return nil
        }
    }

    public var description: String { name }
}

extension String {
    fileprivate func dropping(prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}
