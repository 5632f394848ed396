import TouchlineCore

/// `apns-priority` for Live Activity pushes.
public enum APNsPriority: Sendable, Hashable {
    /// `10`: delivered at once; counts against the activity's hourly budget. Score changes.
    case immediate
    /// `5`: delivered when power allows; does not count against the budget. Routine updates.
    case powerConsiderate

    /// The header value; string literals, so no allocation per request.
    var headerValue: String {
        switch self {
        case .immediate: "10"
        case .powerConsiderate: "5"
        }
    }
}

/// `apns-expiration`: how long APNs keeps trying to deliver.
public enum APNsExpiration: Sendable, Hashable {
    /// `0`: try once, store nothing. The only value a no-storage channel accepts.
    case immediately
    /// Store and retry until this time (whole UNIX seconds).
    case at(UnixTime)

    var headerValue: String {
        switch self {
        case .immediately: "0"
        case .at(let time): String(time.seconds)
        }
    }
}

/// One Live Activity push to one device token: `POST /3/device/{token}`.
///
/// The payload arrives as finished bytes (see ``LiveActivityPayload``), so turning a push into
/// a request costs one path string and a few header slots, nothing else.
public struct LiveActivityPush: Sendable {
    /// Largest payload APNs accepts for a device push.
    public static let maximumPayloadSize = 4096
    /// Largest `apns-collapse-id`, in bytes.
    public static let maximumCollapseIDSize = 64

    /// The ActivityKit push token (update or push-to-start) as hex.
    public var deviceToken: String
    /// The request body, `{"aps":{...}}`, at most 4096 bytes.
    public var payload: [UInt8]
    public var priority: APNsPriority
    /// nil leaves `apns-expiration` out (APNs then stores the push for a while).
    public var expiration: APNsExpiration?
    /// `apns-id`, a canonical lowercase UUID; APNs makes one up when nil.
    public var apnsID: String?
    /// `apns-collapse-id`: the device shows only the newest push with the same id (<= 64 bytes).
    public var collapseID: String?

    public init(deviceToken: String, payload: [UInt8], priority: APNsPriority, expiration: APNsExpiration? = nil,
                apnsID: String? = nil, collapseID: String? = nil) {
        self.deviceToken = deviceToken
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.apnsID = apnsID
        self.collapseID = collapseID
    }
}

/// One update published to a broadcast channel: `POST /4/broadcasts/apps/{bundleId}`.
public struct Broadcast: Sendable {
    /// Largest payload APNs accepts for a broadcast (keep content under 4 KB for the device).
    public static let maximumPayloadSize = 5120

    /// The channel id returned when the channel was created.
    public var channelID: String
    /// The request body, `{"aps":{...}}`, at most 5120 bytes.
    public var payload: [UInt8]
    public var priority: APNsPriority
    /// Required by APNs; a no-storage channel accepts only ``APNsExpiration/immediately``.
    public var expiration: APNsExpiration
    /// `apns-request-id`, a canonical lowercase UUID echoed back; APNs makes one up when nil.
    public var requestID: String?

    public init(channelID: String, payload: [UInt8], priority: APNsPriority, expiration: APNsExpiration = .immediately,
                requestID: String? = nil) {
        self.channelID = channelID
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
    }
}
