/// The ownership a side effect was decided under, written into the id of its request to APNs:
/// `apns-request-id` of a broadcast or a channel change, `apns-id` of a device push, which APNs
/// lets a provider choose (any canonical UUID) and echoes back. What APNs, or the mock in a
/// test, records of each push then shows which gateway sent it and under which fence.
///
/// The id is a version 8 (custom) UUID of RFC 9562, lowercase:
/// `GGGGGGGG-PPPP-8FFF-vFFF-FFFFFFSSSSSS` (hex), where
/// - `G`, 32 bits: the gateway's tag (``tag(of:)``, a hash of its instance name);
/// - `P`, 16 bits: the partition;
/// - `F`, 48 bits: the fence's revision, split around the version nibble `8` and the variant
///   bits `10` (`v` is 8 to b);
/// - `S`, 26 bits: a serial, so that each request's id is its own.
///
/// Revisions past 48 bits and serials past 26 keep their low bits.
public struct FenceStamp: Sendable, Hashable, CustomStringConvertible {
    public let gateway: UInt32
    public let partition: UInt16
    /// The fence's revision (its low 48 bits).
    public let revision: UInt64
    /// The request's serial (its low 26 bits).
    public let serial: UInt32

    static let revisionMask: UInt64 = (1 << 48) - 1
    static let serialMask: UInt32 = (1 << 26) - 1

    public init(gateway: UInt32, partition: Int, fence: Fence, serial: UInt32) {
        self.gateway = gateway
        self.partition = UInt16(truncatingIfNeeded: partition)
        revision = fence.revision.value & Self.revisionMask
        self.serial = serial & Self.serialMask
    }

    /// The fence as far as the stamp holds it.
    public var fence: Fence { Fence(Revision(revision)) }

    /// A gateway's tag: FNV-1a (32 bits) of its instance name, the same across its restarts.
    public static func tag(of instance: InstanceID) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in instance.name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return hash
    }

    /// The request id: a canonical, lowercase UUID. Written digit by digit: it is made for every
    /// fenced push.
    public var uuid: String {
        let versioned = 0x8000 | UInt64(revision >> 36) & 0x0FFF
        let variant = 0x8000 | UInt64(revision >> 22) & 0x3FFF
        let node = (revision & 0x3F_FFFF) << 26 | UInt64(serial)
        return String(unsafeUninitializedCapacity: 36) { text in
            var at = 0
            func put(_ value: UInt64, digits: Int) {
                for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                    text[at] = Self.digits[Int(value >> UInt64(shift) & 0xF)]
                    at += 1
                }
            }
            for (value, digits) in [(UInt64(gateway), 8), (UInt64(partition), 4), (versioned, 4), (variant, 4), (node, 12)] {
                if at > 0 {
                    text[at] = UInt8(ascii: "-")
                    at += 1
                }
                put(value, digits: digits)
            }
            return at
        }
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// The stamp a request id holds; nil for an id that is not one (another version or layout).
    public init?(uuid: String) {
        let groups = uuid.split(separator: "-", omittingEmptySubsequences: false)
        // Hex digits (either case, as APNs may echo them) and dashes only: no signs.
        guard uuid.utf8.allSatisfy({ Self.digits.contains($0 | 0x20) || $0 == UInt8(ascii: "-") }), groups.count == 5, zip(groups, [8, 4, 4, 4, 12]).allSatisfy({ $0.utf8.count == $1 }),
              let gateway = UInt32(groups[0], radix: 16), let partition = UInt16(groups[1], radix: 16),
              let versioned = UInt16(groups[2], radix: 16), let variant = UInt16(groups[3], radix: 16),
              let node = UInt64(groups[4], radix: 16),
              versioned >> 12 == 8, variant >> 14 == 0b10 else { return nil }
        self.gateway = gateway
        self.partition = partition
        revision = UInt64(versioned & 0x0FFF) << 36 | UInt64(variant & 0x3FFF) << 22 | node >> 26
        serial = UInt32(node & UInt64(Self.serialMask))
    }

    public var description: String { "gateway \(String(gateway, radix: 16)), partition \(partition), fence \(revision), serial \(serial)" }
}
