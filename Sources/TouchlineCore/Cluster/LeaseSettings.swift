/// The timing of partition leases, shared by every instance of a cluster.
///
/// The defaults aim at "pushes resume within 5 s after an instance is killed":
/// - `leaseTTL` 3 s: others take a dead owner's partitions at most 3 s after they last saw it
///   renew (plus a write's round trip), leaving time to restore the partitions;
/// - `renewInterval` 1 s: an owner gets two or three tries (with `safetyMargin`) before its
///   lease lapses, so one lost write costs nothing;
/// - `safetyMargin` 500 ms: an owner stops this long before the earliest moment anyone may take
///   over; it covers clock-rate differences between machines (tolerable up to about
///   `safetyMargin / (2 × leaseTTL)`, 8 % here, where real clocks differ by far under 0.1 %);
/// - `memberTTL` 3 s: a dead member stops counting in the balance about when its leases expire,
///   so the others' shares grow in time to take its partitions;
/// - `writeTimeout` 500 ms: an unanswered write is given up in time for a retry before the lease
///   lapses; `retryDelay` 250 ms: a bucket refusing writes is asked again four times a second.
///
/// `partitionCount` is fixed when a cluster is created: changing it moves every channel.
public struct LeaseSettings: Sendable, Equatable {
    /// Partitions the channel events are split into; keys `partition.0` to `partition.<P-1>`.
    public let partitionCount: Int
    /// Time without a new revision of a lease, on the observer's clock from when it learned the
    /// latest one, after which the lease is dead and may be taken over.
    public let leaseTTL: Duration
    /// Time between an owner's renewals of its leases and of its heartbeat.
    public let renewInterval: Duration
    /// An owner considers its lease held until the send time of its last stored renewal plus
    /// `leaseTTL` minus this.
    public let safetyMargin: Duration
    /// Time without a new revision of a member's heartbeat after which it no longer counts.
    public let memberTTL: Duration
    /// A write unanswered for this long counts as failed (it may still have been applied).
    public let writeTimeout: Duration
    /// Time before a failed write of a key is tried again.
    public let retryDelay: Duration

    /// The largest partition count accepted (each partition is a key and runs channel engines).
    public static let maximumPartitionCount = 4096

    /// Checks every rule the safety of ``PartitionLeases`` depends on; the error names the
    /// setting that breaks one.
    public init(partitionCount: Int = 64, leaseTTL: Duration = .seconds(3), renewInterval: Duration = .seconds(1),
                safetyMargin: Duration = .milliseconds(500), memberTTL: Duration = .seconds(3),
                writeTimeout: Duration = .milliseconds(500), retryDelay: Duration = .milliseconds(250)) throws(LeaseSettingsError) {
        guard (1...Self.maximumPartitionCount).contains(partitionCount) else {
            throw LeaseSettingsError(setting: "partitionCount", problem: "must be 1...\(Self.maximumPartitionCount), not \(partitionCount)")
        }
        for (setting, value) in [("leaseTTL", leaseTTL), ("renewInterval", renewInterval), ("safetyMargin", safetyMargin),
                                 ("memberTTL", memberTTL), ("writeTimeout", writeTimeout), ("retryDelay", retryDelay)]
        where value <= .zero {
            throw LeaseSettingsError(setting: setting, problem: "must be positive, not \(value)")
        }
        guard renewInterval * 2 < leaseTTL else {
            throw LeaseSettingsError(setting: "renewInterval",
                                     problem: "must be less than half of leaseTTL (\(leaseTTL)), not \(renewInterval): one lost renewal would lose the lease")
        }
        guard safetyMargin < leaseTTL - renewInterval else {
            throw LeaseSettingsError(setting: "safetyMargin",
                                     problem: "must be less than leaseTTL - renewInterval (\(leaseTTL - renewInterval)), not \(safetyMargin): a lease would lapse before its next renewal")
        }
        guard renewInterval * 2 < memberTTL else {
            throw LeaseSettingsError(setting: "memberTTL",
                                     problem: "must be more than twice renewInterval (\(renewInterval)), not \(memberTTL): one lost heartbeat would drop a member")
        }
        guard writeTimeout <= renewInterval else {
            throw LeaseSettingsError(setting: "writeTimeout",
                                     problem: "must be at most renewInterval (\(renewInterval)), not \(writeTimeout): a renewal must be settled before the next is due")
        }
        guard retryDelay <= renewInterval else {
            throw LeaseSettingsError(setting: "retryDelay",
                                     problem: "must be at most renewInterval (\(renewInterval)), not \(retryDelay): a failed renewal must be retried before the lease lapses")
        }
        self.partitionCount = partitionCount
        self.leaseTTL = leaseTTL
        self.renewInterval = renewInterval
        self.safetyMargin = safetyMargin
        self.memberTTL = memberTTL
        self.writeTimeout = writeTimeout
        self.retryDelay = retryDelay
    }
}

/// A setting of ``LeaseSettings`` that breaks one of its rules, by name.
public struct LeaseSettingsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The parameter's name, e.g. `safetyMargin`.
    public var setting: String
    public var problem: String
    public var description: String { "lease settings: \(setting) \(problem)" }
}
