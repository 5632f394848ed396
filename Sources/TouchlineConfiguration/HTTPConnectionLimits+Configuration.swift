import TouchlineCore
import TouchlineRuntime

/// The gateway's `http` settings: the provider API's connection cap, body budget and deadlines
/// (``HTTPConnectionLimits``, whose members document each one).
///
/// Set as one JSON object (`http` in the file, `TOUCHLINE_HTTP` or `--http`); members left out
/// keep their defaults, durations are in milliseconds. docs/configuration.md explains each; the
/// body limit itself stays `maxBodyBytes`.
extension HTTPConnectionLimits {
    private static let names = ["maxConnections", "maxConnectionsPerAddress", "probeConnections", "maxBufferedBodyBytes",
                                "maxBufferedBodyBytesPerKey", "firstRequestTimeoutMilliseconds", "headTimeoutMilliseconds",
                                "bodyTimeoutMilliseconds", "idleTimeoutMilliseconds", "writeTimeoutMilliseconds"]

    /// Settings from JSON; every member is optional and checked against its range.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        guard case .object(let members) = value else { throw InvalidConfigurationValue("must be an object") }
        let hour = 3_600_000
        for member in members {
            switch member.name {
            case "maxConnections": maxConnections = try Self.integer(member, 1...1_000_000)
            case "maxConnectionsPerAddress": maxConnectionsPerAddress = try Self.integer(member, 1...1_000_000)
            case "probeConnections": probeConnections = try Self.integer(member, 0...10_000)
            case "maxBufferedBodyBytes": maxBufferedBodyBytes = try Self.integer(member, 1...(1 << 40))
            case "maxBufferedBodyBytesPerKey": maxBufferedBodyBytesPerKey = try Self.integer(member, 1...(1 << 40))
            case "firstRequestTimeoutMilliseconds": firstRequestTimeout = .milliseconds(try Self.integer(member, 1...hour))
            case "headTimeoutMilliseconds": headTimeout = .milliseconds(try Self.integer(member, 1...hour))
            case "bodyTimeoutMilliseconds": bodyTimeout = .milliseconds(try Self.integer(member, 1...hour))
            case "idleTimeoutMilliseconds": idleTimeout = .milliseconds(try Self.integer(member, 1...hour))
            case "writeTimeoutMilliseconds": writeTimeout = .milliseconds(try Self.integer(member, 1...hour))
            default:
                let hint = GatewayConfigurationError.closestName(to: member.name, among: Self.names).map { " (did you mean '\($0)'?)" } ?? ""
                throw InvalidConfigurationValue("has unknown key '\(member.name)'\(hint)")
            }
        }
    }

    private static func integer(_ member: JSONValue.Member, _ range: ClosedRange<Int>) throws(InvalidConfigurationValue) -> Int {
        guard case .integer(let number) = member.value, let integer = Int(exactly: number), range.contains(integer) else {
            throw InvalidConfigurationValue("member \(member.name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return integer
    }
}
