/// The order in which one instance reaches for partitions: rendezvous hashing of (partition,
/// instance) with ``SplitMix64``, the same in every process.
///
/// Instances acquire from the top of their own order and release from its bottom, so two
/// instances looking for free partitions rarely reach for the same one first, and the
/// partitions an instance gives up are those it cares least about.
struct PartitionPreference: Sendable {
    /// Every partition, most wanted first.
    let order: [Int]

    init(instance: InstanceID, partitionCount: Int) {
        let seed = Self.stableHash(instance.name)
        let scores = (0..<partitionCount).map { partition in
            var random = SplitMix64(seed: seed ^ (UInt64(partition) &* 0x9E37_79B9_7F4A_7C15))
            return random.next()
        }
        order = (0..<partitionCount).sorted { scores[$0] != scores[$1] ? scores[$0] > scores[$1] : $0 < $1 }
    }

    /// FNV-1a: a hash of the name that every process computes alike (Swift's `Hasher` is seeded
    /// per process).
    private static func stableHash(_ name: String) -> UInt64 {
        name.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }
}
