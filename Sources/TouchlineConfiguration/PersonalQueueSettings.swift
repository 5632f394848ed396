import TouchlineCore

/// How the personal queue fans out: its own APNs connections, its concurrency, its memory
/// window, how often it saves progress, and its delivery policy.
///
/// Set as one JSON object (`personalQueue` in the file, `TOUCHLINE_PERSONAL_QUEUE` or
/// `--personal-queue`); members left out keep their defaults. docs/configuration.md explains each.
public struct PersonalQueueSettings: Sendable, Equatable {
    /// APNs connections of the personal pool (the broadcast pool has its own).
    public var connections: Int
    /// Sends in flight at most, over all jobs: the queue's concurrency limit.
    public var maxInFlight: Int
    /// Unsettled targets one job holds in memory at most.
    public var window: Int
    /// Audience tokens read per page.
    public var pageSize: Int
    /// Least time between two progress saves of one job: a restart re-sends at most what ended
    /// in this interval (plus what was in flight).
    public var saveInterval: Duration
    /// Retries, back-off and attempt limit per APNs outcome.
    public var delivery: PersonalDeliveryPolicy
    /// Niceness of the personal loop's thread (0 = as the others, 19 = lowest): when CPU runs
    /// short, the ingest and broadcast loops go first and the backlog drains with what is left.
    public var niceness: Int
    /// Sends in flight at most, over all jobs, for a second after the broadcast path was slowed
    /// down (an event's commit or a broadcast's hand-off waited `yieldThreshold` or more); 0
    /// (the default) never yields. Off because, with the broadcast path on short time slices,
    /// each return to full speed sent a burst that hurt broadcasts more than the yield helped;
    /// for kernels that do not honour the slices.
    public var yieldInFlight: Int
    /// A wait on the broadcast path that makes the personal queue yield.
    public var yieldThreshold: Duration

    public init(connections: Int = 2, maxInFlight: Int = 1_000, window: Int = 10_000, pageSize: Int = 1_000,
                saveInterval: Duration = .milliseconds(100), delivery: PersonalDeliveryPolicy = PersonalDeliveryPolicy(),
                niceness: Int = 10, yieldInFlight: Int = 0, yieldThreshold: Duration = .milliseconds(1)) {
        self.connections = connections
        self.maxInFlight = maxInFlight
        self.window = window
        self.pageSize = pageSize
        self.saveInterval = saveInterval
        self.delivery = delivery
        self.niceness = niceness
        self.yieldInFlight = yieldInFlight
        self.yieldThreshold = yieldThreshold
    }

    /// The bounds handed to each job.
    package var jobLimits: FanOutJob.Limits { FanOutJob.Limits(window: window, maxInFlight: maxInFlight, pageSize: pageSize) }

    /// Settings from JSON; every member is optional and checked against its range.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        let members = try ConfigurationMembers.members(of: value, allowed: ["connections", "maxInFlight", "window", "pageSize",
                                                            "saveIntervalMilliseconds", "niceness", "yieldInFlight", "yieldThresholdMicroseconds",
                                                            "delivery"], path: nil)
        connections = try ConfigurationMembers.integer(members, "connections", 1...64) ?? connections
        maxInFlight = try ConfigurationMembers.integer(members, "maxInFlight", 1...100_000) ?? maxInFlight
        window = try ConfigurationMembers.integer(members, "window", 1...10_000_000) ?? window
        pageSize = try ConfigurationMembers.integer(members, "pageSize", 1...100_000) ?? pageSize
        guard pageSize <= window else { throw InvalidConfigurationValue("member pageSize must be at most window (\(window)), got \(pageSize)") }
        saveInterval = try ConfigurationMembers.integer(members, "saveIntervalMilliseconds", 1...60_000).map { .milliseconds($0) } ?? saveInterval
        niceness = try ConfigurationMembers.integer(members, "niceness", 0...19) ?? niceness
        yieldInFlight = try ConfigurationMembers.integer(members, "yieldInFlight", 0...100_000) ?? yieldInFlight
        yieldThreshold = try ConfigurationMembers.integer(members, "yieldThresholdMicroseconds", 0...10_000_000).map { .microseconds($0) } ?? yieldThreshold
        guard let delivery = members["delivery"] else { return }
        let policy = try ConfigurationMembers.members(of: delivery, allowed: ["maxAttempts", "maxHandBacks", "retryInitialMilliseconds", "retryMaximumMilliseconds",
                                                             "throttleInitialMilliseconds", "throttleMaximumMilliseconds",
                                                             "multiplier", "jitter"], path: "delivery")
        let day = 86_400_000
        var d = self.delivery
        d.maxAttempts = try ConfigurationMembers.integer(policy, "delivery.maxAttempts", 1...100, key: "maxAttempts") ?? d.maxAttempts
        d.maxHandBacks = try ConfigurationMembers.integer(policy, "delivery.maxHandBacks", 1...1_000, key: "maxHandBacks") ?? d.maxHandBacks
        d.retryInitialMilliseconds = try ConfigurationMembers.integer(policy, "delivery.retryInitialMilliseconds", 1...day, key: "retryInitialMilliseconds")
            .map(Int64.init) ?? d.retryInitialMilliseconds
        d.retryMaximumMilliseconds = try ConfigurationMembers.integer(policy, "delivery.retryMaximumMilliseconds", 1...day, key: "retryMaximumMilliseconds")
            .map(Int64.init) ?? d.retryMaximumMilliseconds
        d.throttleInitialMilliseconds = try ConfigurationMembers.integer(policy, "delivery.throttleInitialMilliseconds", 1...day,
                                                         key: "throttleInitialMilliseconds").map(Int64.init) ?? d.throttleInitialMilliseconds
        d.throttleMaximumMilliseconds = try ConfigurationMembers.integer(policy, "delivery.throttleMaximumMilliseconds", 1...day,
                                                         key: "throttleMaximumMilliseconds").map(Int64.init) ?? d.throttleMaximumMilliseconds
        d.multiplier = try Self.number(policy, "delivery.multiplier", 1...10, key: "multiplier") ?? d.multiplier
        d.jitter = try Self.number(policy, "delivery.jitter", 0...1, key: "jitter") ?? d.jitter
        guard d.retryInitialMilliseconds <= d.retryMaximumMilliseconds, d.throttleInitialMilliseconds <= d.throttleMaximumMilliseconds else {
            throw InvalidConfigurationValue("member delivery: each initial back-off must be at most its maximum")
        }
        self.delivery = d
    }

    private static func number(_ members: [String: JSONValue], _ path: String, _ range: ClosedRange<Double>,
                               key: String) throws(InvalidConfigurationValue) -> Double? {
        guard let value = members[key] else { return nil }
        let number: Double
        switch value {
        case .integer(let integer): number = Double(integer)
        case .number(let double): number = double
        default: throw InvalidConfigurationValue("member \(path) must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        guard range.contains(number) else {
            throw InvalidConfigurationValue("member \(path) must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}

/// An app's own bounds on its personal queue (`apps[].personalQueue`): its pool's connections,
/// its sends in flight and its window. What it leaves out is the gateway's `personalQueue`;
/// the rest of those settings (delivery, saves, niceness, yielding) belong to the one personal
/// loop and store every app shares, so an app cannot set them.
public struct AppPersonalQueueLimits: Sendable, Equatable {
    public var connections: Int?
    public var maxInFlight: Int?
    public var window: Int?

    public init(connections: Int? = nil, maxInFlight: Int? = nil, window: Int? = nil) {
        self.connections = connections
        self.maxInFlight = maxInFlight
        self.window = window
    }

    /// Limits from JSON, in the ranges of the gateway's `personalQueue`.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        let members = try ConfigurationMembers.members(of: value, allowed: ["connections", "maxInFlight", "window"], path: nil)
        connections = try ConfigurationMembers.integer(members, "connections", 1...64)
        maxInFlight = try ConfigurationMembers.integer(members, "maxInFlight", 1...100_000)
        window = try ConfigurationMembers.integer(members, "window", 1...10_000_000)
    }

    /// `base` (the gateway's settings) with these limits over it.
    public func applied(to base: PersonalQueueSettings) -> PersonalQueueSettings {
        var settings = base
        settings.connections = connections ?? base.connections
        settings.maxInFlight = maxInFlight ?? base.maxInFlight
        settings.window = window ?? base.window
        return settings
    }
}
