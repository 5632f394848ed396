/// The name of one gateway instance in a cluster, the same across its restarts (a host or pod
/// name, say).
///
/// It becomes part of a bucket key (`member.<name>`) and of every value the instance writes, so
/// it is restricted to what every key-value store accepts in a key token: 1 to 64 ASCII letters,
/// digits, `-` and `_`. Two running processes must not share a name; a restarted process may,
/// and its writes are still told apart from its earlier run's by ``LeaseRecord/incarnation``.
public struct InstanceID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let name: String

    /// The longest name accepted.
    public static let maximumLength = 64

    /// nil unless `name` is 1 to ``maximumLength`` characters of `A-Z`, `a-z`, `0-9`, `-`, `_`.
    public init?(_ name: String) {
        guard (1...Self.maximumLength).contains(name.utf8.count), name.utf8.allSatisfy(Self.isAllowed) else { return nil }
        self.name = name
    }

    public static func < (a: InstanceID, b: InstanceID) -> Bool { a.name < b.name }

    public var description: String { name }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"): true
        default: false
        }
    }
}
