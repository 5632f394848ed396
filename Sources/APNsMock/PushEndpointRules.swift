/// The app the mock stands in for, with the Live Activity topic computed once.
struct MockAPNsApp: Sendable {
    let bundleID: String
    /// The one topic Live Activity device pushes must carry.
    let liveActivityTopic: String
    /// The age a push-to-start's `aps.timestamp` may have; nil: not checked (as by APNs).
    let startTimestamps: StartTimestampRule?

    init(bundleID: String, startTimestamps: StartTimestampRule? = nil) {
        self.bundleID = bundleID
        liveActivityTopic = bundleID + ".push-type.liveactivity"
        self.startTimestamps = startTimestamps
    }
}

/// What a request amounts to once its rules passed: the facts tests want to assert on.
struct MockAPNsFacts {
    var deviceToken: String?
    var channelID: String?
    var priority: Int?
    var event: String?
}

/// A request body as received: the stored bytes and the true length.
struct MockAPNsBody {
    var bytes: [UInt8]
    var length: Int

    /// PayloadEmpty / PayloadTooLarge, shared by every endpoint that takes a body.
    func checkSize(limit: Int) throws(MockAPNsRejection) {
        guard length > 0 else { throw MockAPNsRejection(.payloadEmpty, "the request has no body") }
        guard length <= limit else {
            throw MockAPNsRejection(.payloadTooLarge, "the body is \(length) bytes; the limit here is \(limit)")
        }
    }
}

/// `POST /3/device/{token}`: per-token pushes (§3 of the APNs reference).
enum DeviceEndpointRules {
    static let payloadLimit = 4096
    /// Device tokens are 32 bytes classically and longer for ActivityKit tokens; APNs documents
    /// no exact length, so the mock accepts 32 to 100 bytes of even-length hex.
    static let tokenHexLength = 64...200
    /// The push types the mock serves; the others (voip, complication, ...) are out of scope.
    static func isServed(pushType: String) -> Bool {
        switch pushType {
        case "liveactivity", "alert", "background": true
        default: false
        }
    }

    static func check(token: String, head: MockAPNsRequestHead, body: MockAPNsBody,
                      app: MockAPNsApp, registry: MockAPNsRegistry) throws(MockAPNsRejection) -> MockAPNsFacts {
        guard tokenHexLength.contains(token.utf8.count), token.utf8.count % 2 == 0, MockAPNsText.isHex(token) else {
            throw MockAPNsRejection(.badDeviceToken, "the device token must be 64 to 200 hex digits (even count)")
        }
        if registry.isForeign(token) {
            throw MockAPNsRejection(.badDeviceToken, "the device token belongs to another environment or app")
        }
        guard let pushType = head.pushType else {
            throw MockAPNsRejection(.missingPushType, "apns-push-type is required (liveactivity for Live Activities)")
        }
        guard isServed(pushType: pushType) else {
            throw MockAPNsRejection(.invalidPushType, "apns-push-type \(pushType) is not liveactivity, alert or background")
        }
        let isLiveActivity = pushType == "liveactivity"
        try checkTopic(head, expected: isLiveActivity ? app.liveActivityTopic : app.bundleID, pushType: pushType)
        let priority = try checkPriority(head.priority, allowsOne: !isLiveActivity)
        if let expiration = head.expiration, MockAPNsText.decimal(expiration) == nil {
            throw MockAPNsRejection(.badExpirationDate, "apns-expiration must be Unix seconds, got \(expiration)")
        }
        if let id = head.apnsID, !MockAPNsText.isUUID(id) {
            throw MockAPNsRejection(.badMessageID, "apns-id must be a UUID (8-4-4-4-12 hex), got \(id)")
        }
        if let collapseID = head.collapseID, collapseID.utf8.count > 64 {
            throw MockAPNsRejection(.badCollapseID, "apns-collapse-id is \(collapseID.utf8.count) bytes; at most 64")
        }
        try body.checkSize(limit: payloadLimit)
        var facts = MockAPNsFacts(deviceToken: token, priority: priority)
        if isLiveActivity {
            let summary = try LiveActivityPayloadRules.check(body.bytes, for: .device, registry: registry)
            if summary.event == "start", let rule = app.startTimestamps { try rule.check(summary.timestamp) }
            facts.event = summary.event
            facts.channelID = summary.inputPushChannel
        } else {
            try LiveActivityPayloadRules.checkGeneric(body.bytes)
        }
        return facts
    }

    private static func checkTopic(_ head: MockAPNsRequestHead, expected: String, pushType: String) throws(MockAPNsRejection) {
        if head.topicEquals(expected) { return }
        guard let topic = head.topic else { throw MockAPNsRejection(.missingTopic, "apns-topic is required; expected \(expected)") }
        guard !topic.isEmpty, topic.utf8.allSatisfy(isTopicCharacter) else {
            throw MockAPNsRejection(.badTopic, "apns-topic \(topic) is not a bundle identifier")
        }
        throw MockAPNsRejection(.deviceTokenNotForTopic, "apns-topic \(topic) does not match; \(pushType) pushes go to \(expected)")
    }

    private static func isTopicCharacter(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    /// 10, 5 and (where allowed) 1; absent means 10, as APNs assumes.
    static func checkPriority(_ value: String?, allowsOne: Bool) throws(MockAPNsRejection) -> Int {
        guard let value else { return 10 }
        switch value {
        case "10": return 10
        case "5": return 5
        case "1" where allowsOne: return 1
        default: throw MockAPNsRejection(.badPriority, "apns-priority must be 10, 5\(allowsOne ? " or 1" : ""), got \(value)")
        }
    }
}

/// `POST /4/broadcasts/apps/{bundleId}`: publishing to a channel (§2 of the APNs reference).
enum BroadcastEndpointRules {
    static let payloadLimit = 5120
    /// Channel ids are opaque, but APNs rejects over-long ones with `BadChannelId`.
    static let maxChannelIDLength = 64

    static func check(bundleID: String, head: MockAPNsRequestHead, body: MockAPNsBody,
                      app: MockAPNsApp, registry: MockAPNsRegistry) throws(MockAPNsRejection) -> MockAPNsFacts {
        try ChannelEndpointRules.checkBundle(bundleID, app: app)
        if let topic = head.topic {
            throw MockAPNsRejection(.badRequestParams, "apns-topic (\(topic)) must not be sent to broadcasts; the bundle id is in the path")
        }
        if let id = head.requestID, !MockAPNsText.isUUID(id) {
            throw MockAPNsRejection(.badMessageID, "apns-request-id must be a UUID (8-4-4-4-12 hex), got \(id)")
        }
        guard let pushType = head.pushType else { throw MockAPNsRejection(.missingPushType, "apns-push-type is required") }
        guard pushType == "liveactivity" else {
            throw MockAPNsRejection(.invalidPushType, "broadcasts take apns-push-type liveactivity, got \(pushType)")
        }
        let (channelID, policy) = try ChannelEndpointRules.liveChannel(head.channelID, registry: registry)
        guard head.priority != nil else { throw MockAPNsRejection(.badPriority, "apns-priority is required for broadcasts") }
        let priority = try DeviceEndpointRules.checkPriority(head.priority, allowsOne: true)
        guard let expirationText = head.expiration else {
            throw MockAPNsRejection(.badExpirationDate, "apns-expiration is required for broadcasts (0 = no storage)")
        }
        guard let expiration = MockAPNsText.decimal(expirationText) else {
            throw MockAPNsRejection(.badExpirationDate, "apns-expiration must be Unix seconds, got \(expirationText)")
        }
        if policy == 0, expiration != 0 {
            throw MockAPNsRejection(.badExpirationDate, "channel \(channelID) stores no messages, so apns-expiration must be 0")
        }
        try body.checkSize(limit: payloadLimit)
        let summary = try LiveActivityPayloadRules.check(body.bytes, for: .broadcast, registry: registry)
        return MockAPNsFacts(channelID: channelID, priority: priority, event: summary.event)
    }
}
