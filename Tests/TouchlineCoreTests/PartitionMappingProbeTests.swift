import Testing
import TouchlineCore

/// The probes of the servers' partition mapping: what they show, and that they tell every two
/// partition counts apart.
@Suite struct PartitionMappingProbeTests {
    static func landed(on count: Int, tokens: [String] = PartitionMappingProbe.tokens) -> [String: Int] {
        let partitioning = ChannelPartitioning(count: count)!
        return Dictionary(uniqueKeysWithValues: tokens.map { ($0, partitioning.partition(of: $0)) })
    }

    @Test func theVerdictNamesTheServersCountWhenItDiffers() {
        let gateways = ChannelPartitioning(count: 64)!
        #expect(PartitionMappingProbe.verdict(landed: Self.landed(on: 64), partitioning: gateways) == .agrees)
        #expect(PartitionMappingProbe.verdict(landed: [:], partitioning: gateways) == .unmapped)
        #expect(PartitionMappingProbe.verdict(landed: Self.landed(on: 32), partitioning: gateways) == .mismatch(serverCount: 32))
        #expect(PartitionMappingProbe.verdict(landed: Self.landed(on: 128), partitioning: gateways) == .mismatch(serverCount: 128))
        let half = Self.landed(on: 64, tokens: Array(PartitionMappingProbe.tokens.prefix(16)))
        #expect(PartitionMappingProbe.verdict(landed: half, partitioning: gateways) == .incomplete(seen: 16))
        // Landing that no count explains (another function, another subject).
        let odd = Dictionary(uniqueKeysWithValues: PartitionMappingProbe.tokens.enumerated().map { ($0.element, $0.offset % 2 == 0 ? 5000 : 0) })
        #expect(PartitionMappingProbe.verdict(landed: odd, partitioning: gateways) == .mismatch(serverCount: nil))
    }

    @Test func everyTwoCountsUpTo1024PutSomeProbeOnDifferentPartitions() {
        let hashes = PartitionMappingProbe.tokens.map(ChannelPartitioning.hash(of:))
        var undistinguished: [(Int, Int)] = []
        for first in 1...1_023 {
            for second in (first + 1)...1_024 where hashes.allSatisfy({ $0 % UInt32(first) == $0 % UInt32(second) }) {
                undistinguished.append((first, second))
            }
        }
        #expect(undistinguished.isEmpty, "\(undistinguished.prefix(10))")
    }
}
