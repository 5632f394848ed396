import TouchlineCore

/// What one API key may make the gateway do, beyond its request rate: how many channels it may
/// hold and how many fan-outs of push-to-start it may ask for, and how often one channel may
/// roll over. Each of these multiplies pushes or holds APNs channels, disk and memory, so one
/// key must not be able to use the gateway up for the others (docs/reliability.md, "Per-key
/// bounds").
///
/// Set as one JSON object (`keyLimits` in the file, `TOUCHLINE_KEY_LIMITS` or `--key-limits`);
/// members left out keep their defaults, and a key may carry its own (`apiKeys[].limits`,
/// ``Override``). Provider keys are held to them; admin keys only to a `limits` of their own.
/// docs/configuration.md explains each.
public struct KeyLimits: Sendable, Equatable {
    /// Channels (not yet deleted) in a provider key's scope at most: creates beyond get 409
    /// `key_channel_limit`. Apple's 10,000 channels are the app's, so without a share per key
    /// one provider could take them all.
    public var channels: Int
    /// Fan-outs of push-to-start a provider key may ask for: a bucket of ``startBurst`` kickoffs
    /// (scheduled ones too) and rollovers, refilled at this many per hour (429 `start_rate_limited`).
    public var startsPerHour: Double
    public var startBurst: Int
    /// The least time between two rollovers of one channel, whoever asks (429 `rollover_too_soon`
    /// for an operator's; one due by age waits). As long as the shortest activity age allowed.
    public var rolloverInterval: Duration

    static let channelRange = 1...100_000
    static let startsPerHourRange = 0.01...1_000_000.0
    static let startBurstRange = 1...100_000
    static let rolloverIntervalRange = 0...28_800

    public init(channels: Int = 1_000, startsPerHour: Double = 120, startBurst: Int = 1_000, rolloverInterval: Duration = .seconds(600)) {
        self.channels = channels
        self.startsPerHour = startsPerHour
        self.startBurst = startBurst
        self.rolloverInterval = rolloverInterval
    }

    /// `{"channels", "startsPerHour", "startBurst", "rolloverIntervalSeconds"}`, each optional.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        let members = try ConfigurationMembers.members(of: value, allowed: ["channels", "startsPerHour", "startBurst", "rolloverIntervalSeconds"],
                                                       path: nil)
        let key = try Override(members: members)
        channels = key.channels ?? channels
        startsPerHour = key.startsPerHour ?? startsPerHour
        startBurst = key.startBurst ?? startBurst
        if let seconds = try ConfigurationMembers.integer(members, "rolloverIntervalSeconds", Self.rolloverIntervalRange) {
            rolloverInterval = .seconds(seconds)
        }
    }

    /// One key's own limits (`apiKeys[].limits`): what it gives replaces the gateway's.
    public struct Override: Sendable, Equatable {
        public var channels: Int?
        public var startsPerHour: Double?
        public var startBurst: Int?

        public init(channels: Int? = nil, startsPerHour: Double? = nil, startBurst: Int? = nil) {
            self.channels = channels
            self.startsPerHour = startsPerHour
            self.startBurst = startBurst
        }

        /// `{"channels", "startsPerHour", "startBurst"}`, each optional.
        init(json value: JSONValue) throws(InvalidConfigurationValue) {
            try self.init(members: try ConfigurationMembers.members(of: value, allowed: ["channels", "startsPerHour", "startBurst"], path: nil))
        }

        fileprivate init(members: [String: JSONValue]) throws(InvalidConfigurationValue) {
            channels = try ConfigurationMembers.integer(members, "channels", KeyLimits.channelRange)
            startBurst = try ConfigurationMembers.integer(members, "startBurst", KeyLimits.startBurstRange)
            startsPerHour = switch members["startsPerHour"] {
            case nil: nil
            case .integer(let number)? where KeyLimits.startsPerHourRange.contains(Double(number)): Double(number)
            case .number(let number)? where KeyLimits.startsPerHourRange.contains(number): number
            default: throw InvalidConfigurationValue("member startsPerHour must be a number from 0.01 to 1000000")
            }
        }
    }

    /// The channel and start limits of `key`: its own over these for a provider key; an admin
    /// key only its own (nil members: not limited).
    package func applied(to key: GatewayConfiguration.APIKey) -> (channels: Int?, starts: KeyRateLimit?) {
        let own = key.limits ?? Override()
        let isAdmin = key.scope == .admin
        let channels = own.channels ?? (isAdmin ? nil : self.channels)
        let rate = own.startsPerHour ?? (isAdmin && own.startBurst == nil ? nil : startsPerHour)
        let burst = own.startBurst ?? (isAdmin && own.startsPerHour == nil ? nil : startBurst)
        guard let rate, let burst else { return (channels, nil) }
        return (channels, KeyRateLimit(requestsPerSecond: rate / 3600, burst: burst))
    }
}
