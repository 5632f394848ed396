/// Channel management on the management port (§1 of the APNs reference).
enum ChannelEndpointRules {
    /// A successful management answer: status, optional JSON body, optional new channel id.
    struct Outcome {
        var status: Int
        var body: [UInt8] = []
        var createdChannelID: String?
        var facts = MockAPNsFacts()
    }

    static let createBodyLimit = 4096

    /// The bundle id in a broadcast or management path: the plain id of the configured app.
    static func checkBundle(_ bundleID: String, app: MockAPNsApp) throws(MockAPNsRejection) {
        if bundleID.contains(".push-type.") {
            throw MockAPNsRejection(.topicDisallowed, "the path takes the plain bundle id, not \(bundleID)")
        }
        guard bundleID == app.bundleID else {
            throw MockAPNsRejection(.topicMismatch, "bundle id \(bundleID) is not covered by the provider key (expected \(app.bundleID))")
        }
    }

    /// `apns-channel-id` must be present, base64, not too long, and name a live channel.
    static func liveChannel(_ header: String?, registry: MockAPNsRegistry) throws(MockAPNsRejection) -> (id: String, policy: Int) {
        guard let id = header else { throw MockAPNsRejection(.missingChannelID, "apns-channel-id is required") }
        guard id.utf8.count <= BroadcastEndpointRules.maxChannelIDLength, MockAPNsText.isBase64(id) else {
            throw MockAPNsRejection(.badChannelID, "apns-channel-id must be base64 of at most \(BroadcastEndpointRules.maxChannelIDLength) characters, got \(id)")
        }
        guard let policy = registry.storagePolicy(of: id) else {
            throw MockAPNsRejection(.channelNotRegistered, "channel \(id) does not exist (never created, or deleted)")
        }
        return (id, policy)
    }

    static func handle(_ route: MockAPNsRoute, head: MockAPNsRequestHead, body: MockAPNsBody,
                       app: MockAPNsApp, registry: MockAPNsRegistry) throws(MockAPNsRejection) -> Outcome {
        if let id = head.requestID, !MockAPNsText.isUUID(id) {
            throw MockAPNsRejection(.badMessageID, "apns-request-id must be a UUID (8-4-4-4-12 hex), got \(id)")
        }
        switch route {
        case .createChannel(let bundleID):
            try checkBundle(bundleID, app: app)
            let policy = try creationPolicy(body)
            guard let id = registry.createChannel(storagePolicy: policy) else {
                throw MockAPNsRejection(.cannotCreateChannelConfig, "the app already has the maximum number of channels")
            }
            return Outcome(status: 201, createdChannelID: id, facts: MockAPNsFacts(channelID: id))
        case .readChannel(let bundleID):
            try checkBundle(bundleID, app: app)
            let (id, policy) = try liveChannel(head.channelID, registry: registry)
            let json = "{\"message-storage-policy\":\(policy),\"push-type\":\"LiveActivity\"}"
            return Outcome(status: 200, body: Array(json.utf8), facts: MockAPNsFacts(channelID: id))
        case .deleteChannel(let bundleID):
            try checkBundle(bundleID, app: app)
            let (id, _) = try liveChannel(head.channelID, registry: registry)
            _ = registry.deleteChannel(id)
            return Outcome(status: 204, facts: MockAPNsFacts(channelID: id))
        case .listChannels(let bundleID):
            try checkBundle(bundleID, app: app)
            let ids = registry.channels.keys.sorted().map { "\"\($0)\"" }.joined(separator: ",")
            return Outcome(status: 200, body: Array("{\"channels\":[\(ids)]}".utf8))
        case .device, .broadcast:
            preconditionFailure("push routes are not channel management")
        }
    }

    /// The create body: exactly `message-storage-policy` (0 or 1) and `push-type` ("LiveActivity").
    private static func creationPolicy(_ body: MockAPNsBody) throws(MockAPNsRejection) -> Int {
        try body.checkSize(limit: createBodyLimit)
        let document: JSONDocument
        do {
            document = try JSONDocument(body.bytes)
        } catch {
            throw MockAPNsRejection(.badRequestPayload, "the body is not JSON: \(error)")
        }
        guard document.root.kind == .object else { throw MockAPNsRejection(.badRequestPayload, "the body must be a JSON object") }
        var policy: Int64?
        var pushType: String?
        for member in document.members(of: document.root) {
            let key = document.key(member)
            switch key {
            case "message-storage-policy" where policy == nil:
                policy = document.integer(member.value)
                guard policy == 0 || policy == 1 else {
                    throw MockAPNsRejection(.badRequestParams, "message-storage-policy must be 0 or 1")
                }
            case "push-type" where pushType == nil:
                guard member.value.kind == .string else { throw MockAPNsRejection(.badRequestParams, "push-type must be a string") }
                pushType = document.string(member.value)
                guard pushType == "LiveActivity" else {
                    throw MockAPNsRejection(.badRequestParams, "push-type must be \"LiveActivity\", got \"\(pushType!)\"")
                }
            default:
                throw MockAPNsRejection(.badRequestParams, "unexpected or repeated attribute \(key)")
            }
        }
        guard let policy, pushType != nil else {
            throw MockAPNsRejection(.badRequestParams, "message-storage-policy and push-type are both required")
        }
        return Int(policy)
    }
}
