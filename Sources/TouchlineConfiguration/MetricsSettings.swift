import TouchlineCore

/// How `/metrics` is exposed: whether it needs an API key, and how many channels get their own
/// `channel` label (the rest are summed under `channel="_other"`, so cardinality stays bounded).
///
/// Set as one JSON object (`metrics` in the file, `TOUCHLINE_METRICS` or `--metrics`); members
/// left out keep their defaults. docs/configuration.md and docs/metrics.md explain each.
public struct MetricsSettings: Sendable, Equatable {
    /// When true, `/metrics` takes any valid API key (bearer), like the `/v1` routes; when false
    /// (default) it is open, as Prometheus scrapers expect: bind the gateway to a private
    /// interface or put it behind a proxy that only the scraper reaches.
    public var requireKey: Bool
    /// Channels with their own `channel` label at most (0 to 100000).
    public var maxChannelLabels: Int

    public init(requireKey: Bool = false, maxChannelLabels: Int = 200) {
        self.requireKey = requireKey
        self.maxChannelLabels = maxChannelLabels
    }

    /// Settings from JSON; every member is optional and checked.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        guard case .object(let members) = value else { throw InvalidConfigurationValue("must be an object") }
        for member in members {
            switch (member.name, member.value) {
            case ("requireKey", .bool(let flag)):
                requireKey = flag
            case ("requireKey", _):
                throw InvalidConfigurationValue("member requireKey must be true or false")
            case ("maxChannelLabels", .integer(let number)) where (0...100_000).contains(number):
                maxChannelLabels = Int(number)
            case ("maxChannelLabels", _):
                throw InvalidConfigurationValue("member maxChannelLabels must be a whole number from 0 to 100000")
            default:
                let hint = GatewayConfigurationError.closestName(to: member.name, among: ["requireKey", "maxChannelLabels"])
                    .map { " (did you mean '\($0)'?)" } ?? ""
                throw InvalidConfigurationValue("has unknown key '\(member.name)'\(hint)")
            }
        }
    }
}
