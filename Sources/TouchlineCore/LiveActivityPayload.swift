

/// The `aps` dictionary of a Live Activity push (per-token or broadcast), encoded once into the
/// bytes that go on the wire.
///
/// Keys are always written in this order, so equal payloads give equal bytes (tests compare
/// exact output, and de-duplication can compare bytes):
/// `timestamp, event, content-state, stale-date, dismissal-date, relevance-score, alert,
/// attributes-type, attributes, input-push-channel, input-push-token`.
public struct LiveActivityPayload: Sendable, Equatable {
    public enum Event: String, Sendable {
        /// Push-to-start; needs `attributes-type`, `attributes` and an `alert`.
        case start
        case update
        case end
    }

    /// When the state was produced (UNIX seconds); the device keeps the newest update.
    public var timestamp: UnixTime
    public var event: Event
    /// Must match the app's `ContentState` exactly (system default JSON decoding).
    public var contentState: JSONValue
    /// After this the activity shows as stale; advance it with each update.
    public var staleDate: UnixTime?
    /// With `.end`: when to remove the activity from the Lock Screen (past = at once).
    public var dismissalDate: UnixTime?
    /// Orders the app's concurrent activities; the highest gets the Dynamic Island.
    public var relevanceScore: Double?
    /// Lights the screen; required for `.start`.
    public var alert: LiveActivityAlert?
    /// Start only: the Swift `ActivityAttributes` type name.
    public var attributesType: String?
    /// Start only: the static attributes.
    public var attributes: JSONValue?
    /// Start only (iOS 18+): subscribe the new activity to this broadcast channel.
    public var inputPushChannel: String?
    /// Start only (iOS 18+): ask the system to issue an update token (`"input-push-token": 1`).
    public var requestsPushToken: Bool

    public init(timestamp: UnixTime, event: Event, contentState: JSONValue, staleDate: UnixTime? = nil,
                dismissalDate: UnixTime? = nil, relevanceScore: Double? = nil, alert: LiveActivityAlert? = nil,
                attributesType: String? = nil, attributes: JSONValue? = nil, inputPushChannel: String? = nil,
                requestsPushToken: Bool = false) {
        self.timestamp = timestamp
        self.event = event
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.alert = alert
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushChannel = inputPushChannel
        self.requestsPushToken = requestsPushToken
    }

    /// The complete request body, `{"aps":{...}}`.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(capacity: 128 + contentState.rawCount + (attributes?.rawCount ?? 0))
        writer.openObject()
        writer.key("aps")
        writer.openObject()
        writer.key("timestamp"); writer.integer(timestamp.seconds)
        writer.key("event"); writer.string(event.rawValue)
        writer.key("content-state"); writer.value(contentState)
        if let staleDate { writer.key("stale-date"); writer.integer(staleDate.seconds) }
        if let dismissalDate { writer.key("dismissal-date"); writer.integer(dismissalDate.seconds) }
        if let relevanceScore { writer.key("relevance-score"); writer.number(relevanceScore) }
        if let alert { writer.key("alert"); alert.write(to: &writer) }
        if let attributesType { writer.key("attributes-type"); writer.string(attributesType) }
        if let attributes { writer.key("attributes"); writer.value(attributes) }
        if let inputPushChannel { writer.key("input-push-channel"); writer.string(inputPushChannel) }
        if requestsPushToken { writer.key("input-push-token"); writer.integer(1) }
        writer.closeObject()
        writer.closeObject()
        return writer.bytes
    }
}

/// The `alert` of a Live Activity push: `title`, `body` and an optional `sound`.
public struct LiveActivityAlert: Sendable, Equatable {
    /// Literal text, or a key into the app's localised strings with arguments.
    public enum Text: Sendable, Equatable, ExpressibleByStringLiteral {
        case plain(String)
        /// Written as `{"loc-key": key, "loc-args": [arguments...]}`.
        case localized(key: String, arguments: [String])

        public init(stringLiteral value: String) { self = .plain(value) }

        fileprivate func write(to writer: inout JSONWriter) {
            switch self {
            case .plain(let text): writer.string(text)
            case .localized(let key, let arguments):
                writer.openObject()
                writer.key("loc-key"); writer.string(key)
                writer.key("loc-args"); writer.value(.array(arguments.map(JSONValue.string)))
                writer.closeObject()
            }
        }
    }

    public var title: Text
    public var body: Text
    /// A sound file name, or `"default"`.
    public var sound: String?

    public init(title: Text, body: Text, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }

    fileprivate func write(to writer: inout JSONWriter) {
        writer.openObject()
        writer.key("title"); title.write(to: &writer)
        writer.key("body"); body.write(to: &writer)
        if let sound { writer.key("sound"); writer.string(sound) }
        writer.closeObject()
    }
}

extension JSONValue {
    /// The size of raw bytes, to size the output buffer once.
    fileprivate var rawCount: Int {
        if case .raw(let bytes) = self { bytes.count } else { 0 }
    }
}
