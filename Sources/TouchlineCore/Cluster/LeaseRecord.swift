/// The value of every key an instance writes in the lease bucket (a partition's lease or its
/// own heartbeat): who wrote it, in which run of the process, with which write.
///
/// The run and the write are what make a restart and a lost answer safe. A record written by an
/// earlier run of the same ``InstanceID`` has another `incarnation`, so a restarted instance
/// treats it like anybody else's (it waits for it to expire) instead of assuming it still owns
/// the partition. A record carrying this run's incarnation and the number of one of its own
/// writes tells the instance that this write was stored, even when its answer was lost, and
/// when it was sent.
public struct LeaseRecord: Hashable, Sendable, CustomStringConvertible {
    public var holder: InstanceID
    /// Random per process start (``PartitionLeases/init(instance:incarnation:settings:now:)``).
    public var incarnation: UInt64
    /// The write of the holder that stored this record.
    public var write: BucketWrite.ID

    public init(holder: InstanceID, incarnation: UInt64, write: BucketWrite.ID) {
        self.holder = holder
        self.incarnation = incarnation
        self.write = write
    }

    private static let formatVersion = "1"

    /// The bytes stored in the bucket: `1 <holder> <incarnation, hex> <write>`, readable in a
    /// bucket listing.
    public var encoded: [UInt8] {
        Array("\(Self.formatVersion) \(holder.name) \(String(incarnation, radix: 16)) \(write.sequence)".utf8)
    }

    /// The record `bytes` encode; nil for anything ``encoded`` never produces (the shell reports
    /// such a value as ``PartitionLeases/ObservedValue/unreadable``).
    public init?(encoded bytes: [UInt8]) {
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == Self.formatVersion, let holder = InstanceID(String(fields[1])),
              let incarnation = UInt64(fields[2], radix: 16), let write = UInt64(fields[3]) else { return nil }
        self.init(holder: holder, incarnation: incarnation, write: BucketWrite.ID(sequence: write))
    }

    public var description: String { "\(holder)/\(String(incarnation, radix: 16))#\(write.sequence)" }
}
