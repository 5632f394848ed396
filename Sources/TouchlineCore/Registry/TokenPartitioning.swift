/// Which partition of a cluster's token registry holds a token, and which holds a user's entry
/// in the user directory (docs/cluster.md, "The partitioned token registry").
///
/// - **Tokens by their leading digits.** A token's partition is its first four hex digits
///   scaled to the partition count, so each partition holds one contiguous range of token order.
///   A kickoff walks its audience in token order; cut at the same bounds, each of its slices is
///   one partition's range, read from the file of the gateway that owns it, and a slice moves
///   when, and only when, its tokens do. APNs tokens are uniformly distributed bytes, so the
///   ranges hold equal shares.
/// - **Users by a hash.** The rule that a registration replaces the user's previous token of its
///   kind joins tokens of any partition; it is decided in the user's partition (FNV-1a of the
///   user id, as channels are placed), which lists the user's tokens.
///
/// The count is the cluster's partition count, fixed with its streams.
public struct TokenPartitioning: Sendable, Equatable {
    public let count: Int

    /// The number of distinct leading prefixes: four hex digits.
    static let prefixValues = 1 << 16

    public init(_ partitioning: ChannelPartitioning) { count = partitioning.count }

    /// The partition holding `token` (lowercase or uppercase hex). A token shorter than four
    /// digits, or with other characters, is placed by the digits it has (others count as 0):
    /// registered tokens are validated hex of 64 digits or more, so this only keeps the function total.
    public func partition(ofToken token: String) -> Int {
        Int(Self.prefix(of: token)) * count / Self.prefixValues
    }

    /// The partition whose directory lists `userID`'s tokens.
    public func partition(ofUser userID: String) -> Int {
        Int(ChannelPartitioning.hash(of: userID) % UInt32(count))
    }

    /// The first prefix value of `partition`'s range: the smallest v with v · count ≥ partition · 2¹⁶.
    func firstPrefix(of partition: Int) -> Int {
        (partition * Self.prefixValues + count - 1) / count
    }

    /// The cursor a walk of `partition`'s tokens starts after (nil: from the first token). Every
    /// token of the partition sorts after its first prefix written alone, and every token of an
    /// earlier partition before it.
    public func startCursor(of partition: Int) -> String? {
        partition == 0 ? nil : Self.hex(firstPrefix(of: partition))
    }

    /// Tokens of `partition` sort before this (nil: the last partition, no bound).
    public func upperBound(of partition: Int) -> String? {
        partition == count - 1 ? nil : Self.hex(firstPrefix(of: partition + 1))
    }

    /// The value of the first four digits of `token`.
    static func prefix(of token: String) -> UInt32 {
        var value: UInt32 = 0
        var digits = 0
        for byte in token.utf8.prefix(4) {
            value = value << 4 | UInt32(hexValue(byte))
            digits += 1
        }
        return value << (4 * UInt32(4 - digits))
    }

    private static func hexValue(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: 0
        }
    }

    /// Four lowercase hex digits.
    static func hex(_ value: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }
}
