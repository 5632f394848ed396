/// The value of every key an instance writes in the lease bucket (a partition's lease or its
/// own heartbeat): who wrote it, in which run of the process, with which write, and how long its
/// readers must wait after it before presuming the writer dead.
///
/// The run and the write are what make a restart and a lost answer safe. A record written by an
/// earlier run of the same ``InstanceID`` has another `incarnation`, so a restarted instance
/// treats it like anybody else's (it waits for it to expire) instead of assuming it still owns
/// the partition. A record carrying this run's incarnation and the number of one of its own
/// writes tells the instance that this write was stored, even when its answer was lost, and
/// when it was sent.
///
/// The TTL travels with the record because the writer's promise depends on it: an owner stops
/// using its lease `ttl − safetyMargin` after sending the renewal, on its own settings. A reader
/// that waited its own, shorter TTL could take the partition over while the owner still sends;
/// waiting the TTL the record names is safe whatever each gateway is set to, so the lease timing
/// can differ between gateways and be changed one gateway at a time.
public struct LeaseRecord: Hashable, Sendable, CustomStringConvertible {
    public var holder: InstanceID
    /// Random per process start (``PartitionLeases/init(instance:incarnation:settings:now:)``).
    public var incarnation: UInt64
    /// The write of the holder that stored this record.
    public var write: BucketWrite.ID
    /// How long after learning this record its readers wait before presuming the holder dead:
    /// the holder's ``LeaseSettings/leaseTTL`` in a partition's lease, its
    /// ``LeaseSettings/memberTTL`` in its heartbeat. Whole milliseconds.
    public var ttl: Duration

    public init(holder: InstanceID, incarnation: UInt64, write: BucketWrite.ID, ttl: Duration) {
        self.holder = holder
        self.incarnation = incarnation
        self.write = write
        self.ttl = .milliseconds(ttl.inMilliseconds)
    }

    /// The TTL of a record in the first format, which does not say: the only lease and member
    /// TTL gateways writing that format had.
    public static let firstFormatTTL: Duration = .seconds(3)
    /// A TTL a record may name at most (a day): anything longer is not a lease.
    public static let maximumTTL: Duration = .seconds(86_400)

    /// The bytes stored in the bucket: `2 <holder> <incarnation, hex> <write> <ttl, ms>`, readable
    /// in a bucket listing.
    public var encoded: [UInt8] {
        Array("2 \(holder.name) \(String(incarnation, radix: 16)) \(write.sequence) \(ttl.inMilliseconds)".utf8)
    }

    /// The record `bytes` encode, in this format or the first (`1 <holder> <incarnation> <write>`,
    /// whose TTL is ``firstFormatTTL``); nil for anything neither produces (the shell reports
    /// such a value as ``PartitionLeases/ObservedValue/unreadable``).
    public init?(encoded bytes: [UInt8]) {
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        let ttl: Duration
        switch (fields.first, fields.count) {
        case ("1", 4):
            ttl = Self.firstFormatTTL
        case ("2", 5):
            guard let milliseconds = Int64(fields[4]), milliseconds > 0, milliseconds <= Self.maximumTTL.inMilliseconds else { return nil }
            ttl = .milliseconds(milliseconds)
        default:
            return nil
        }
        guard let holder = InstanceID(String(fields[1])), let incarnation = UInt64(fields[2], radix: 16), let write = UInt64(fields[3]) else {
            return nil
        }
        self.init(holder: holder, incarnation: incarnation, write: BucketWrite.ID(sequence: write), ttl: ttl)
    }

    public var description: String { "\(holder)/\(String(incarnation, radix: 16))#\(write.sequence)" }
}
