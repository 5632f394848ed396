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
    /// Every live member with the number of partitions it holds now.
    public let holdings: [InstanceID: Int]

    /// `holdings`: every live member with the number of partitions it holds now (0 for none).
    public init(partitionCount: Int, holdings: [InstanceID: Int]) {
        self.partitionCount = partitionCount
        self.holdings = holdings
    }

    /// The share of `member`; 0 for one that is not live.
    public subscript(member: InstanceID) -> Int {
        guard let held = holdings[member] else { return 0 }
        let base = partitionCount / holdings.count
        let larger = partitionCount % holdings.count
        let rank = holdings.count(where: { $0.value > held || ($0.value == held && $0.key < member) })
        return rank < larger ? base + 1 : base
    }
}
