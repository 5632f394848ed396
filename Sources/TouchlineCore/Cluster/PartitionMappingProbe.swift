/// Whether the servers' subject mapping spreads directly published events over the same
/// partitions as the gateways (`store.partitions`), read from where probe messages land.
///
/// Providers publish to `<prefix>.in.<channel>` and the servers' mapping
/// `{{partition(count,1)}}` puts each event on its partition's ingest subject. A count in that
/// mapping other than the gateways' puts a channel's events on a partition its owner does not
/// serve: they end as `channel_not_found`, or wait for nobody. At start a gateway publishes
/// ``tokens`` to `<prefix>.in.<token>` and reads the partition each lands on; this value says
/// what that shows. No channel id holds `!`, so no probe is ever taken for an event.
///
/// The 32 tokens tell every pair of counts from 1 to 1,024 apart (a test checks all of them):
/// two counts that are multiples of each other put a token on the same partition half of the
/// time, so a few tokens would not.
public enum PartitionMappingProbe {
    /// What the probes showed.
    public enum Verdict: Sendable, Equatable {
        /// Every probe landed on the partition the gateways compute.
        case agrees
        /// No probe reached the ingest subjects: the servers map nothing there (direct
        /// publishing is not set up; HTTP ingest is unaffected).
        case unmapped
        /// The probes landed elsewhere: on the partitions of `serverCount` partitions (nil when
        /// no count from 1 to 1,024 explains them: another function or another subject).
        case mismatch(serverCount: Int?)
        /// Only some probes came back in time.
        case incomplete(seen: Int)
    }

    /// The prefix of every probe token; the ingest takes messages of such tokens as probes.
    public static let tokenPrefix = "mapping-probe!"
    public static let tokens: [String] = (0..<32).map { "\(tokenPrefix)\($0)" }

    /// The verdict on `landed`: the partition each probe token landed on, for those seen.
    public static func verdict(landed: [String: Int], partitioning: ChannelPartitioning) -> Verdict {
        guard !landed.isEmpty else { return .unmapped }
        let agrees = landed.allSatisfy { partitioning.partition(of: $0.key) == $0.value }
        guard agrees else { return .mismatch(serverCount: serverCount(explaining: landed)) }
        return landed.count == tokens.count ? .agrees : .incomplete(seen: landed.count)
    }

    /// The smallest partition count that puts every probe where it landed.
    static func serverCount(explaining landed: [String: Int]) -> Int? {
        (1...1_024).first { count in
            let partitioning = ChannelPartitioning(count: count)!
            return landed.allSatisfy { partitioning.partition(of: $0.key) == $0.value }
        }
    }
}
