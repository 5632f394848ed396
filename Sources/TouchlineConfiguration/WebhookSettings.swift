import TouchlineCore

/// Webhooks: the endpoints that receive signed event POSTs, and how deliveries are retried,
/// bounded and kept.
///
/// Set as one JSON object (`webhooks` in the file, `TOUCHLINE_WEBHOOKS` or `--webhooks`): the
/// endpoints and their settings are one value from one source, checked as a whole, so a
/// mistake anywhere refuses the whole setting and the gateway does not start half configured.
/// docs/configuration.md explains each member.
public struct WebhookSettings: Sendable, Equatable {
    /// One receiver.
    public struct Endpoint: Sendable, Equatable {
        /// Stable key of its deliveries in the store and its `endpoint` label in metrics.
        public var name: String
        public var url: WebhookURL
        /// The HMAC-SHA256 key (at least 16 bytes); never logged or shown.
        public var secret: [UInt8]
        public var events: Set<WebhookEventType>

        public init(name: String, url: WebhookURL, secret: [UInt8], events: Set<WebhookEventType>) {
            self.name = name
            self.url = url
            self.secret = secret
            self.events = events
        }
    }

    public var endpoints: [Endpoint]
    /// Back-off between attempts and the age at which a delivery is given up.
    public var retry: WebhookRetryPolicy
    /// The deadline of one attempt: connect, TLS, request and the answer's head.
    public var requestTimeout: Duration
    /// Attempts in flight to one endpoint at most: a slow receiver holds this many connections, no more.
    public var maxConcurrentPerEndpoint: Int
    /// How long events stay in the outbox (for `GET /v1/events` and late deliveries); at least
    /// the dead-letter age, so no pending delivery is pruned.
    public var retention: Duration
    /// Trust this CA file for `https://` receivers instead of the system bundle.
    public var caFile: String?

    /// Endpoints at most.
    public static let maximumEndpoints = 16
    static let minimumSecretBytes = 16
    static let maximumSecretBytes = 1024

    public init(endpoints: [Endpoint] = [], retry: WebhookRetryPolicy = WebhookRetryPolicy(), requestTimeout: Duration = .seconds(10),
                maxConcurrentPerEndpoint: Int = 4, retention: Duration = .seconds(172_800), caFile: String? = nil) {
        self.endpoints = endpoints
        self.retry = retry
        self.requestTimeout = requestTimeout
        self.maxConcurrentPerEndpoint = maxConcurrentPerEndpoint
        self.retention = retention
        self.caFile = caFile
    }

    /// The endpoints subscribed to `type`, by name.
    package func subscribers(of type: WebhookEventType) -> [String] { endpoints.filter { $0.events.contains(type) }.map(\.name) }

    /// Settings from JSON, every member checked; `directory` (the configuration file's) makes a
    /// relative `caFile` relative to it.
    init(json value: JSONValue, pathsRelativeTo directory: String? = nil) throws(InvalidConfigurationValue) {
        self.init()
        let members = try ConfigurationMembers.members(of: value, allowed: ["endpoints", "retryInitialMilliseconds", "retryMaximumMilliseconds",
                                                            "deadLetterAfterSeconds", "requestTimeoutMilliseconds",
                                                            "maxConcurrentPerEndpoint", "retentionSeconds", "caFile"], path: nil)
        let day = 86_400
        let initial = try ConfigurationMembers.integer(members, "retryInitialMilliseconds", 1...(day * 1000)) ?? 1_000
        let maximum = try ConfigurationMembers.integer(members, "retryMaximumMilliseconds", 1...(day * 1000)) ?? 300_000
        guard initial <= maximum else {
            throw InvalidConfigurationValue("member retryInitialMilliseconds (\(initial)) must be at most retryMaximumMilliseconds (\(maximum))")
        }
        let deadAfter = try ConfigurationMembers.integer(members, "deadLetterAfterSeconds", 60...(30 * day)) ?? day
        retry = WebhookRetryPolicy(backoff: Backoff(initial: .milliseconds(initial), maximum: .milliseconds(maximum), multiplier: 2, jitter: 0.5),
                                   deadAfter: .seconds(deadAfter))
        requestTimeout = try ConfigurationMembers.integer(members, "requestTimeoutMilliseconds", 100...120_000).map { .milliseconds($0) } ?? requestTimeout
        maxConcurrentPerEndpoint = try ConfigurationMembers.integer(members, "maxConcurrentPerEndpoint", 1...64) ?? maxConcurrentPerEndpoint
        let retentionSeconds = try ConfigurationMembers.integer(members, "retentionSeconds", 60...(90 * day)) ?? max(2 * day, deadAfter)
        guard retentionSeconds >= deadAfter else {
            throw InvalidConfigurationValue("member retentionSeconds (\(retentionSeconds)) must be at least deadLetterAfterSeconds (\(deadAfter)), or pending deliveries would be pruned")
        }
        retention = .seconds(retentionSeconds)
        if let ca = members["caFile"] {
            guard case .string(let path) = ca, !path.isEmpty else { throw InvalidConfigurationValue("member caFile must be a non-empty path") }
            caFile = path.hasPrefix("/") ? path : directory.map { $0 + "/" + path } ?? path
        }
        guard let list = members["endpoints"] else { return }
        guard case .array(let entries) = list else { throw InvalidConfigurationValue("member endpoints must be an array") }
        guard entries.count <= Self.maximumEndpoints else {
            throw InvalidConfigurationValue("member endpoints has \(entries.count) entries; at most \(Self.maximumEndpoints)")
        }
        for (index, entry) in entries.enumerated() {
            let endpoint = try Self.endpoint(entry, path: "endpoints[\(index)]")
            guard !endpoints.contains(where: { $0.name == endpoint.name }) else {
                throw InvalidConfigurationValue("member endpoints[\(index)].name '\(endpoint.name)' is used twice; give each endpoint its own name")
            }
            endpoints.append(endpoint)
        }
    }

    private static func endpoint(_ value: JSONValue, path: String) throws(InvalidConfigurationValue) -> Endpoint {
        let members = try ConfigurationMembers.members(of: value, allowed: ["name", "url", "secret", "events"], path: path)
        guard case .string(let urlText)? = members["url"] else { throw InvalidConfigurationValue("member \(path).url must be given as a string") }
        let url: WebhookURL
        do { url = try WebhookURL(parsing: urlText) } catch { throw InvalidConfigurationValue("member \(path).url \(error.predicate)") }
        // The secret is never echoed back, not even in part.
        guard case .string(let secret)? = members["secret"] else { throw InvalidConfigurationValue("member \(path).secret must be given as a string") }
        guard (minimumSecretBytes...maximumSecretBytes).contains(secret.utf8.count) else {
            throw InvalidConfigurationValue("member \(path).secret must be \(minimumSecretBytes) to \(maximumSecretBytes) bytes, got \(secret.utf8.count)")
        }
        guard case .array(let names)? = members["events"], !names.isEmpty else {
            throw InvalidConfigurationValue("member \(path).events must be a non-empty array of event types (or [\"*\"] for all)")
        }
        var events = Set<WebhookEventType>()
        for (index, name) in names.enumerated() {
            guard case .string(let text) = name else { throw InvalidConfigurationValue("member \(path).events[\(index)] must be a string") }
            if text == "*" { events.formUnion(WebhookEventType.allCases); continue }
            guard let type = WebhookEventType(rawValue: text) else {
                let known = WebhookEventType.allCases.map(\.rawValue)
                let hint = GatewayConfigurationError.closestName(to: text, among: known).map { " (did you mean '\($0)'?)" } ?? ""
                throw InvalidConfigurationValue("member \(path).events[\(index)] '\(text)' is not an event type\(hint); known: \(known.joined(separator: ", "))")
            }
            events.insert(type)
        }
        let name: String
        switch members["name"] {
        case nil: name = url.authority
        case .string(let text)?: name = text
        default: throw InvalidConfigurationValue("member \(path).name must be a string")
        }
        guard (1...64).contains(name.utf8.count), name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:[]".contains($0)) }) else {
            throw InvalidConfigurationValue("member \(path).name must be 1 to 64 characters of A-Z, a-z, 0-9, '-', '_', '.', ':'")
        }
        return Endpoint(name: name, url: url, secret: Array(secret.utf8), events: events)
    }
}
