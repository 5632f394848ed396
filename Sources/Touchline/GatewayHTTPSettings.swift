import TouchlineCore
import TouchlineRuntime

/// The provider API's connection limits and deadlines: how many clients it serves at once, how
/// much request body it holds in memory, and how long each phase of a request may take.
///
/// Set as one JSON object (`http` in the file, `TOUCHLINE_HTTP` or `--http`); members left out
/// keep their defaults. docs/configuration.md explains each; the body limit itself stays
/// `maxBodyBytes`.
public struct HTTPSettings: Sendable, Equatable {
    /// Connections open at once; one more gets 503 `too_many_connections` and is closed.
    public var maxConnections: Int
    /// Request bodies held in memory at once, all connections together; a body that would pass
    /// it gets 503 `server_busy` with `Retry-After`. At least `maxBodyBytes`.
    public var maxBufferedBodyBytes: Int
    /// A request head must be complete this long after its first byte (408 otherwise).
    public var headTimeout: Duration
    /// A request body must be complete this long after its head (408 otherwise).
    public var bodyTimeout: Duration
    /// A keep-alive connection without a request under way is closed after this long.
    public var idleTimeout: Duration
    /// A client that takes no byte of its answer for this long is disconnected.
    public var writeTimeout: Duration

    public init(maxConnections: Int = 1024, maxBufferedBodyBytes: Int = 64 << 20, headTimeout: Duration = .seconds(10),
                bodyTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(60), writeTimeout: Duration = .seconds(30)) {
        self.maxConnections = maxConnections
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
    }

    /// `base` with these settings.
    func serverConfiguration(_ base: HTTPServerConfiguration) -> HTTPServerConfiguration {
        var configuration = base
        configuration.maxConnections = maxConnections
        configuration.maxBufferedBodyBytes = maxBufferedBodyBytes
        configuration.headTimeout = headTimeout
        configuration.bodyTimeout = bodyTimeout
        configuration.idleTimeout = idleTimeout
        configuration.writeTimeout = writeTimeout
        return configuration
    }

    private static let names = ["maxConnections", "maxBufferedBodyBytes", "headTimeoutMilliseconds", "bodyTimeoutMilliseconds",
                                "idleTimeoutMilliseconds", "writeTimeoutMilliseconds"]

    /// Settings from JSON; every member is optional and checked against its range.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        guard case .object(let members) = value else { throw InvalidConfigurationValue("must be an object") }
        let hour = 3_600_000
        for member in members {
            switch member.name {
            case "maxConnections": maxConnections = try Self.integer(member, 1...1_000_000)
            case "maxBufferedBodyBytes": maxBufferedBodyBytes = try Self.integer(member, 1...(1 << 40))
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
