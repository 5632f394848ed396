/// Which partition a channel's events belong to: the same function NATS servers apply in a
/// subject mapping `{{partition(count, 1)}}` (FNV-1a, 32 bits, of the channel's subject token,
/// modulo the count). Gateways publish straight to a partition's subject, providers publish to the
/// unpartitioned ingest subject and the servers map it, and both land on the same partition;
/// a test holds this to a real server's mapping.
///
/// The count is fixed when the cluster's streams are created: changing it would move channels
/// between partitions, and with them the order of their events.
public struct ChannelPartitioning: Sendable, Equatable {
    public let count: Int

    /// `count` between 1 and 1,024 (a lease per partition is renewed every second).
    public init?(count: Int) {
        guard (1...1_024).contains(count) else { return nil }
        self.count = count
    }

    /// The channel's partition: the hash of its subject token, as the servers compute it.
    public func partition(of channelID: String) -> Int {
        Int(Self.hash(of: channelID) % UInt32(count))
    }

    /// FNV-1a (32 bits) of the channel's subject token: its partition is this modulo the count.
    public static func hash(of channelID: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        // The subject token's bytes, without making it: '.' is written '~' (``subjectToken(_:)``;
        // in UTF-8 the byte of '.' is never part of another character). Once per event written
        // on a cluster, so it allocates nothing.
        for byte in channelID.utf8 {
            hash ^= UInt32(byte == UInt8(ascii: ".") ? UInt8(ascii: "~") : byte)
            hash &*= 16_777_619
        }
        return hash
    }

    /// The channel id as one NATS subject token. Channel ids may hold '.', which separates
    /// tokens, so it is written '~' (a character ids never hold, so no two ids share a token).
    public static func subjectToken(_ channelID: String) -> String {
        channelID.utf8.contains(UInt8(ascii: ".")) ? channelID.replacingDots() : channelID
    }
}

extension String {
    fileprivate func replacingDots() -> String {
        String(unicodeScalars.map { $0 == "." ? "~" : Character($0) })
    }
}
