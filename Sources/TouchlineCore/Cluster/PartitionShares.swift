/// How many partitions each live member should hold: the balancing rule every instance applies
/// to what it sees.
///
/// With P partitions and N members, every share is ⌊P/N⌋ or ⌈P/N⌉ and the shares add up to P, so
/// once every member holds its share every partition is owned and nobody holds more than ⌈P/N⌉.
/// The P mod N larger shares go to the members holding the most (ties: the smaller name), so a
/// settled cluster keeps exactly what it holds, and a change of membership moves only what the
/// new shares require: a joining member takes ⌊P/N⌋ even when everybody else is already at
/// ⌈P/N⌉ of the new count, because only the P mod N largest holders may stay there.
///
/// Instances compute shares from their own, slightly different views; those converge with the
/// views, and a partition two instances reach for at once goes to one by compare-and-set.
public struct PartitionShares: Sendable, Equatable {
    public let partitionCount: Int
    /// Every live member's share.
    public let shares: [InstanceID: Int]

    /// `holdings`: every live member with the number of partitions it holds now (0 for none).
    public init(partitionCount: Int, holdings: [InstanceID: Int]) {
        self.partitionCount = partitionCount
        guard !holdings.isEmpty else {
            shares = [:]
            return
        }
        let base = partitionCount / holdings.count
        let larger = partitionCount % holdings.count
        let ranked = holdings.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        var shares: [InstanceID: Int] = [:]
        for (rank, member) in ranked.enumerated() { shares[member.key] = rank < larger ? base + 1 : base }
        self.shares = shares
    }

    /// The share of `member`; 0 for one that is not live.
    public subscript(member: InstanceID) -> Int { shares[member] ?? 0 }
}
