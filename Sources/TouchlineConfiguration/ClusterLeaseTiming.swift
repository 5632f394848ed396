import TouchlineCore

/// The timing of this gateway's partition leases (`store.leases`, one JSON object; docs/cluster.md,
/// "Lease timing"): how soon others take its partitions over when it dies or stops, against how
/// many lease writes the cluster carries and how long a stall it survives without losing them.
///
/// Only `ttlMilliseconds` is needed: the others default to the standard proportions of it (a
/// third, a sixth, all of it, a sixth and a twelfth), which is the standard timing at 3,000.
/// Each lease and heartbeat record names the TTL it was written with, and its readers wait that
/// long, so gateways of one cluster may differ and the timing may be changed one gateway at a
/// time.
public struct ClusterLeaseTiming: Sendable, Equatable {
    public var ttl: Duration
    public var renewInterval: Duration
    public var safetyMargin: Duration
    public var memberTTL: Duration
    public var writeTimeout: Duration
    public var retryDelay: Duration

    /// The standard timing: a 3 s TTL.
    public static let standard = ClusterLeaseTiming(ttlMilliseconds: 3_000)

    /// `ttlMilliseconds` and the rest in the standard proportions.
    public init(ttlMilliseconds ttl: Int64) {
        self.ttl = .milliseconds(ttl)
        renewInterval = .milliseconds(ttl / 3)
        safetyMargin = .milliseconds(ttl / 6)
        memberTTL = .milliseconds(ttl)
        writeTimeout = .milliseconds(ttl / 6)
        retryDelay = .milliseconds(ttl / 12)
    }

    /// The lease settings for `partitions` (checked when the configuration was read).
    public func leaseSettings(partitions: Int) throws(LeaseSettingsError) -> LeaseSettings {
        try LeaseSettings(partitionCount: partitions, leaseTTL: ttl, renewInterval: renewInterval, safetyMargin: safetyMargin,
                          memberTTL: memberTTL, writeTimeout: writeTimeout, retryDelay: retryDelay)
    }

    /// Every member, as the file names it, with the ``LeaseSettings`` parameter it sets.
    private static let members: [(name: String, setting: String, keyPath: WritableKeyPath<ClusterLeaseTiming, Duration> & Sendable)] = [
        ("ttlMilliseconds", "leaseTTL", \.ttl), ("renewIntervalMilliseconds", "renewInterval", \.renewInterval),
        ("safetyMarginMilliseconds", "safetyMargin", \.safetyMargin), ("memberTTLMilliseconds", "memberTTL", \.memberTTL),
        ("writeTimeoutMilliseconds", "writeTimeout", \.writeTimeout), ("retryDelayMilliseconds", "retryDelay", \.retryDelay),
    ]

    /// The timing from JSON, checked for `partitions`: `ttlMilliseconds` from 300 to 60,000, the
    /// others from 10 to 60,000 and within the rules of ``LeaseSettings``.
    init(json value: JSONValue, partitions: Int) throws(InvalidConfigurationValue) {
        let members = try ConfigurationMembers.members(of: value, allowed: Self.members.map(\.name), path: "leases")
        guard let ttl = try ConfigurationMembers.integer(members, "leases.ttlMilliseconds", 300...60_000, key: "ttlMilliseconds") else {
            throw InvalidConfigurationValue("member leases needs ttlMilliseconds (the others default to its standard proportions)")
        }
        self.init(ttlMilliseconds: Int64(ttl))
        for member in Self.members.dropFirst() {
            if let milliseconds = try ConfigurationMembers.integer(members, "leases.\(member.name)", 10...60_000, key: member.name) {
                self[keyPath: member.keyPath] = .milliseconds(milliseconds)
            }
        }
        do {
            _ = try leaseSettings(partitions: partitions)
        } catch {
            let member = Self.members.first { $0.setting == error.setting }?.name ?? error.setting
            throw InvalidConfigurationValue("member leases.\(member) \(error.problem.replacing("leaseTTL", with: "ttlMilliseconds"))")
        }
    }

    /// As `--check-config` shows it.
    var summary: String {
        Self.members.map { "\($0.name) \(self[keyPath: $0.keyPath].inMilliseconds)" }.joined(separator: ", ")
    }
}
