import TouchlineCore

/// Which APNs operation a request asked for (after routing).
public enum MockAPNsEndpoint: String, Sendable, CaseIterable, Hashable {
    /// `POST /3/device/{token}` on the push port.
    case device
    /// `POST /4/broadcasts/apps/{bundleId}` on the push port.
    case broadcast
    /// `POST /1/apps/{bundleId}/channels` on the management port.
    case createChannel
    /// `GET /1/apps/{bundleId}/channels` on the management port.
    case readChannel
    /// `DELETE /1/apps/{bundleId}/channels` on the management port.
    case deleteChannel
    /// `GET /1/apps/{bundleId}/all-channels` on the management port.
    case listChannels
    /// A path or method APNs does not serve on that port (404 BadPath / 405 MethodNotAllowed).
    case unknown
}

/// Which listener a connection came in on.
public enum MockAPNsPort: String, Sendable {
    /// Device pushes and broadcasts (api.push.apple.com:443).
    case push
    /// Channel management (api-manage-broadcast.push.apple.com:2196).
    case management
}

/// A setup problem (unreadable key or certificate, bad flag, failed listen), in words.
public struct MockAPNsSetupError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Everything the mock server needs to know. Immutable once the server starts.
public struct MockAPNsConfiguration: Sendable {
    /// A provider key the mock accepts tokens from.
    public struct ProviderKey: Sendable {
        /// The 10-character key id expected in the JWT header's `kid`.
        public var keyID: String
        /// A PEM public key, or the `.p8` private key itself (its public half is used).
        public var path: String

        public init(keyID: String, path: String) {
            self.keyID = keyID
            self.path = path
        }
    }

    /// Misbehaviour on demand, so clients can be tested against APNs' failure modes.
    public struct Faults: Sendable {
        /// Device tokens (hex, any case) answered with 410 `Unregistered` and a `timestamp`.
        public var unregisteredTokens: Set<String>
        /// Share (0...1) of otherwise valid requests answered 429 `TooManyRequests`.
        public var tooManyRequestsRate: Double
        /// Share (0...1) answered 500 `InternalServerError`.
        public var internalServerErrorRate: Double
        /// Share (0...1) answered 503 `Shutdown`.
        public var shutdownRate: Double
        /// Endpoints the three rates apply to.
        public var rateEndpoints: Set<MockAPNsEndpoint>
        /// Delay added before every response.
        public var latency: Duration
        /// Send GOAWAY after this many requests on a connection (last-stream-id = that request's
        /// stream), serve the requests up to it, then close. Nil = never.
        public var goawayAfterRequests: Int?
        /// The `reason` in the GOAWAY's JSON payload.
        public var goawayReason: String
        /// Once a client has sent GOAWAY, answer none of its streams still open, as some servers
        /// do: their requests were processed (recorded and counted as answered) but the client
        /// never hears back, and the connection stays open until the client closes it. A client
        /// that says GOAWAY before its last answer sees those requests unanswered.
        public var silentAfterClientGoaway: Bool
        /// Seed for the fault dice; connection n uses `seed + n`, so runs repeat exactly.
        public var seed: UInt64
        /// How far APNs's clock runs ahead of the configured clock when it ages provider tokens
        /// (negative: behind): a client whose clock is this much behind sees its tokens called
        /// expired (403 ExpiredProviderToken) that much earlier, as with a real skewed clock.
        public var providerTokenClockOffset: Duration

        public init(unregisteredTokens: Set<String> = [], tooManyRequestsRate: Double = 0, internalServerErrorRate: Double = 0,
                    shutdownRate: Double = 0, rateEndpoints: Set<MockAPNsEndpoint> = [.device, .broadcast],
                    latency: Duration = .zero, goawayAfterRequests: Int? = nil, goawayReason: String = "Shutdown", seed: UInt64 = 1,
                    providerTokenClockOffset: Duration = .zero, silentAfterClientGoaway: Bool = false) {
            self.unregisteredTokens = unregisteredTokens
            self.tooManyRequestsRate = tooManyRequestsRate
            self.internalServerErrorRate = internalServerErrorRate
            self.shutdownRate = shutdownRate
            self.rateEndpoints = rateEndpoints
            self.latency = latency
            self.goawayAfterRequests = goawayAfterRequests
            self.goawayReason = goawayReason
            self.seed = seed
            self.providerTokenClockOffset = providerTokenClockOffset
            self.silentAfterClientGoaway = silentAfterClientGoaway
        }
    }

    /// The app's bundle id; Live Activity topics are `{bundleID}.push-type.liveactivity`.
    public var bundleID: String
    /// The 10-character team id expected as the JWT `iss`.
    public var teamID: String
    /// Accepted signing keys.
    public var keys: [ProviderKey]
    /// PEM server certificate chain and key; when nil, a throwaway CA and certificate are
    /// generated at start (see ``MockAPNsDevelopmentCertificates``).
    public var certificateFile: String?
    public var privateKeyFile: String?
    /// Numeric listen address.
    public var host: String
    /// Push port (0 = any free port).
    public var pushPort: Int
    /// Channel management port (0 = any free port).
    public var managementPort: Int
    /// Event loops serving connections (one accepts and deals connections out round-robin).
    public var threads: Int
    /// SETTINGS_MAX_CONCURRENT_STREAMS before a connection's first accepted request (APNs: 1).
    public var initialMaxConcurrentStreams: Int
    /// SETTINGS_MAX_CONCURRENT_STREAMS after the first accepted request.
    public var maxConcurrentStreams: Int
    /// Live channels allowed per app (APNs: 10,000).
    public var channelLimit: Int
    /// Requests kept for inspection (the most recent ones); 0 turns recording off.
    public var recordingCapacity: Int
    /// A JSON file that keeps the live channels across restarts (read at start, rewritten on every
    /// create and delete), as APNs keeps them; nil = channels live in memory only.
    public var channelsFile: String?
    /// Adds a diagnostic `x-mock-apns-detail` header to error responses (APNs sends none).
    public var diagnosticHeader: Bool
    /// The clock for token ages and 410 timestamps; tests inject a `ManualClock`.
    public var clock: any WallClock
    public var faults: Faults
    /// A payload member holding the sender's Unix time in nanoseconds (`"sentAt": N`): every
    /// accepted push carrying it adds a sample of arrival latency (``MockAPNsServer/takeArrivalReport()``).
    /// Nil: no latency is measured (arrivals and statuses still are).
    public var arrivalLatencyField: String?
    /// How far a push-to-start's `aps.timestamp` may be from the mock's clock when it arrives
    /// (`--start-timestamp-tolerance`): a start stamped earlier (or later) is `400
    /// BadRequestPayload`. Nil, the default: not checked, as APNs does not (``StartTimestampRule``).
    public var startTimestampTolerance: Duration?

    public init(bundleID: String, teamID: String, keys: [ProviderKey], certificateFile: String? = nil, privateKeyFile: String? = nil,
                host: String = "127.0.0.1", pushPort: Int = 0, managementPort: Int = 0, threads: Int = 1,
                initialMaxConcurrentStreams: Int = 1, maxConcurrentStreams: Int = 1000, channelLimit: Int = 10_000,
                recordingCapacity: Int = 10_000, diagnosticHeader: Bool = true, clock: any WallClock = SystemClock(),
                faults: Faults = Faults(), arrivalLatencyField: String? = nil) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.keys = keys
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.host = host
        self.pushPort = pushPort
        self.managementPort = managementPort
        self.threads = threads
        self.initialMaxConcurrentStreams = initialMaxConcurrentStreams
        self.maxConcurrentStreams = maxConcurrentStreams
        self.channelLimit = channelLimit
        self.recordingCapacity = recordingCapacity
        self.diagnosticHeader = diagnosticHeader
        self.clock = clock
        self.faults = faults
        self.arrivalLatencyField = arrivalLatencyField
    }

    /// Rejects settings that cannot work, naming the field.
    func validate() throws(MockAPNsSetupError) {
        guard !bundleID.isEmpty else { throw MockAPNsSetupError("the bundle id is empty") }
        guard !teamID.isEmpty else { throw MockAPNsSetupError("the team id is empty") }
        guard !keys.isEmpty else { throw MockAPNsSetupError("no provider key is configured") }
        guard threads >= 1 else { throw MockAPNsSetupError("threads must be at least 1") }
        guard initialMaxConcurrentStreams >= 1, maxConcurrentStreams >= 1 else {
            throw MockAPNsSetupError("stream limits must be at least 1")
        }
        guard channelLimit >= 0, recordingCapacity >= 0 else { throw MockAPNsSetupError("limits must not be negative") }
        guard (certificateFile == nil) == (privateKeyFile == nil) else {
            throw MockAPNsSetupError("give both a certificate file and a private key file, or neither")
        }
        for (name, rate) in [("429", faults.tooManyRequestsRate), ("500", faults.internalServerErrorRate), ("503", faults.shutdownRate)] {
            guard (0...1).contains(rate) else { throw MockAPNsSetupError("the \(name) rate must be between 0 and 1") }
        }
        guard faults.tooManyRequestsRate + faults.internalServerErrorRate + faults.shutdownRate <= 1 else {
            throw MockAPNsSetupError("the fault rates add up to more than 1")
        }
        if let field = arrivalLatencyField, field.isEmpty || field.contains("\"") || field.contains("\\") {
            throw MockAPNsSetupError("the arrival latency field must be a plain JSON member name")
        }
        if let n = faults.goawayAfterRequests, n < 1 { throw MockAPNsSetupError("GOAWAY after must be at least 1 request") }
        guard faults.latency >= .zero else { throw MockAPNsSetupError("latency must not be negative") }
        if let tolerance = startTimestampTolerance, tolerance < .zero { throw MockAPNsSetupError("the start timestamp tolerance must not be negative") }
    }
}
