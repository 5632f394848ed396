import Testing
import TouchlineCore

struct TokenPartitioningTests {
    static func partitioning(_ count: Int) -> TokenPartitioning { TokenPartitioning(ChannelPartitioning(count: count)!) }

    /// Tokens of random bytes, as APNs issues them, in hex of 64 digits.
    static func tokens(_ count: Int, seed: UInt64) -> [String] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            (0..<4).map { _ in
                let digits = String(random.next(), radix: 16)
                return String(repeating: "0", count: 16 - digits.count) + digits
            }.joined()
        }
    }

    @Test(arguments: [1, 3, 8, 16, 64, 100, 1_024])
    func eachPartitionIsOneRangeOfTokenOrderBetweenItsCursors(count: Int) {
        let partitioning = Self.partitioning(count)
        let sorted = Self.tokens(5_000, seed: UInt64(count)).sorted()
        let partitions = sorted.map(partitioning.partition(ofToken:))
        #expect(partitions == partitions.sorted(), "a later token in a lower partition")
        #expect(partitions.allSatisfy { (0..<count).contains($0) })
        for (token, partition) in zip(sorted, partitions) {
            #expect(partitioning.startCursor(of: partition).map { token > $0 } ?? true, "\(token) before its partition's cursor")
            #expect(partitioning.upperBound(of: partition).map { token < $0 } ?? true, "\(token) at or past its partition's bound")
            if partition > 0 { #expect(partitioning.upperBound(of: partition - 1) == partitioning.startCursor(of: partition)) }
        }
        #expect(partitioning.startCursor(of: 0) == nil && partitioning.upperBound(of: count - 1) == nil)
    }

    @Test func theBoundsFallOnPrefixesAndEveryPrefixHasOnePartition() {
        let partitioning = Self.partitioning(3)
        // 65,536 / 3: 21,845.33…, so partition 1 starts at prefix 21,846 (0x5556), partition 2 at 43,691 (0xaaab).
        #expect(partitioning.startCursor(of: 1) == "5556" && partitioning.startCursor(of: 2) == "aaab")
        #expect(partitioning.partition(ofToken: "5555" + String(repeating: "f", count: 60)) == 0)
        #expect(partitioning.partition(ofToken: "5556" + String(repeating: "0", count: 60)) == 1)
        #expect(partitioning.partition(ofToken: "FFFF" + String(repeating: "0", count: 60)) == 2, "uppercase is read as lowercase")
        for count in [1, 7, 16, 1_024] {
            let partitioning = Self.partitioning(count)
            var counts = Array(repeating: 0, count: count)
            for prefix in 0..<65_536 { counts[partitioning.partition(ofToken: String(prefix, radix: 16).leftPadded(to: 4) + "00")] += 1 }
            #expect(counts.max()! - counts.min()! <= 1, "partitions of \(count) hold \(counts.min()!) to \(counts.max()!) prefixes")
        }
    }

    @Test func shortOrForeignTokensStillHaveAPartition() {
        let partitioning = Self.partitioning(16)
        #expect(partitioning.partition(ofToken: "") == 0)
        #expect(partitioning.partition(ofToken: "f") == 15, "f, as f000")
        #expect(partitioning.partition(ofToken: "zz") == 0)
    }

    @Test func usersSpreadOverThePartitionsLikeChannels() {
        let partitioning = Self.partitioning(8)
        let channels = ChannelPartitioning(count: 8)!
        for user in ["u-1", "fan.42", "émile"] { #expect(partitioning.partition(ofUser: user) == channels.partition(of: user)) }
        var counts = Array(repeating: 0, count: 8)
        for index in 0..<8_000 { counts[partitioning.partition(ofUser: "user-\(index)")] += 1 }
        #expect(counts.allSatisfy { (800...1_200).contains($0) }, "\(counts)")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
